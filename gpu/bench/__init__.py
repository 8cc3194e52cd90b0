"""Measurements of the engine (NTT, H step, prove; field/curve/MSM kernels): the code behind ``psagent bench``
and benchmarks/*.py. The top layer of ``gpu``: it may import every other part, nothing imports it."""
