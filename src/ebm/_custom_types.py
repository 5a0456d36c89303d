from jaxtyping import Array, ArrayLike, Float


Scalar = Float[Array, ""]
ScalarLike = Float[ArrayLike, ""]
Temperature = Float[Array, " lat"]
"""Surface temperature on cell centres, degC."""
Flux = Float[Array, " lat"]
"""An energy flux on cell centres, W m-2."""
EdgeValues = Float[Array, " lat+1"]
"""A quantity on the `n_lat + 1` cell bounds, pole to pole."""
