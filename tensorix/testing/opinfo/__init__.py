"""Op registry entries, one module per op family (imported by ``all_opinfos``)."""
