"""Pipeline-parallel training of an 8-layer MLP with GPipe, 1F1B and interleaved 1F1B;
each rank reports the final weights of the layers its stages hold, and its losses."""

import sys
from pathlib import Path

import numpy as np

import tensorix as tx
from tensorix import nn

LAYERS, WIDTH, BATCH, MICRO, STEPS = 8, 6, 8, 4, 2


def build():
    tx.manual_seed(0)
    layers = []
    for _ in range(LAYERS):
        layers += [nn.Linear(WIDTH, WIDTH), nn.Tanh()]
    return nn.Sequential(*layers).to(tx.float64)


def batch(step):
    rng = np.random.default_rng(step)
    return tx.tensor(rng.standard_normal((BATCH, WIDTH))), \
        tx.tensor(rng.standard_normal((BATCH, WIDTH)))


def main():
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import report

    import tensorix.distributed as dist
    from tensorix.distributed import pipeline as pp

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {}
    for name, cls, v in (("gpipe", pp.ScheduleGPipe, 1), ("1f1b", pp.Schedule1F1B, 1),
                         ("interleaved", pp.ScheduleInterleaved1F1B, 2)):
        model = build()
        n_stages = world * v
        per = 2 * LAYERS // n_stages  # modules per stage (Linear, Tanh pairs)
        ids = [rank + c * world for c in range(v)]
        stages = [pp.PipelineStage(model[s * per:(s + 1) * per], s, n_stages) for s in ids]
        sched = cls(stages if v > 1 else stages[0], MICRO, nn.functional.mse_loss)
        params = [p for st in stages for p in st.submod.parameters()]
        opt = tx.optim.SGD(params, lr=0.1)
        losses = []
        for step in range(STEPS):
            x, y = batch(step)
            opt.zero_grad()
            sched.step(x if 0 in ids else None, target=y, losses=losses)
            opt.step()
        held = {}
        for s in ids:
            for i in range(s * per, (s + 1) * per):
                for k, t in model[i].state_dict().items():
                    held[f"{i}.{k}"] = t.numpy()
        out[name] = {"weights": held, "losses": [loss.item() for loss in losses]}
    report(rank, out)


if __name__ == "__main__":
    main()
