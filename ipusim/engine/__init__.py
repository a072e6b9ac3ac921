"""The engine: the host, the IPUs and their links executing a lowered Program.

Two backends run the same tables (``ipusim.engine.tables``): a compiled max-plus recurrence
(``ipusim.engine.fast``) when the host cannot hold the IPUs back, SimPy processes otherwise.
"""

from ipusim.choices import ENGINES
from ipusim.engine.options import HostLink, HostOptions, RunPlan
from ipusim.engine.simulator import Simulation, SimulationResult, simulate

__all__ = [
    "ENGINES",
    "HostLink",
    "HostOptions",
    "RunPlan",
    "Simulation",
    "SimulationResult",
    "simulate",
]
