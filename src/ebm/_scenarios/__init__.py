"""Forcing scenarios and the data they and the calibration read: the CO2
experiments, forcing series, the assessed historical forcing and observed warming,
the SSP scenarios, and the CMIP6 models' runs. Every model takes them; they import
no model."""
