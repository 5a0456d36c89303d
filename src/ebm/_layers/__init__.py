"""The global ocean-layer models: the two-layer and n-layer models over their
shared linear system, their exact solver, the runs of any protocol model and the
forcing response's metrics."""
