"""``torch.nn.modules.channelshuffle``'s import path; the classes are defined in
``tensorix.nn.layers.shape``."""

from ..layers.shape import ChannelShuffle

__all__ = ["ChannelShuffle"]
