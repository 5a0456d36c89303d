"""Global ocean-layer models (two-layer, n-layer) and the forcing scenarios that
drive them."""
