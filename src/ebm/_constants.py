"""Physical constants, with the values climlab uses so that results are comparable."""

EARTH_RADIUS = 6.373e6  # m
SECONDS_PER_DAY = 86400.0  # s
DAYS_PER_YEAR = 365.2422  # d
SECONDS_PER_YEAR = SECONDS_PER_DAY * DAYS_PER_YEAR  # s
WATER_DENSITY = 1000.0  # kg m-3
WATER_HEAT_CAPACITY = 4181.3  # J kg-1 K-1
PETAWATT = 1e15  # W
