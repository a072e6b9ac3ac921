"""Allowed values shared by the configuration that accepts them and the layers that act on them
(one definition, so the two cannot drift apart)."""

from __future__ import annotations

#: Arithmetic of a run (``IPUConfig.ipusim.precision``): fp32, or half precision with half or
#: float partials.
PRECISIONS = ("fp32", "fp16.16", "fp16.32")

#: What times a run (``IPUConfig.ipusim.engine``): chosen per run, the compiled max-plus path or
#: the SimPy discrete-event model.
ENGINES = ("auto", "fast", "simpy")
