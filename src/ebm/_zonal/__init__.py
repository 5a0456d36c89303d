"""The zonal energy-balance model (Budyko-Sellers): its grid, the model as a
vector field (`ebm.EnergyBalanceModel`), its parameters (`ebm.Params`), where its
solves start, and its physical terms, one folder per kind."""
