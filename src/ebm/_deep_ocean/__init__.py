"""The zonal model over a deep ocean: `ebm.DeepOceanModel`."""
