"""Wagner & Eisenman's (2015) sea-ice energy-balance model."""
