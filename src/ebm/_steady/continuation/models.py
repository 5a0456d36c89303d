"""Which models `ebm.continuation` and `ebm.fold` walk, and how.

Every model is asked (`model.walked_model`) whether its steady states are a zonal
model's branch: the zonal model's are its own, walked on its energy budget with its
tridiagonal Jacobian; an `ebm.DeepOceanModel`'s are its surface model's equilibria
with the scenario's forcing at time `t` added, so its branch and its folds are those
of the surface model; the global layer models refuse (linear: one steady state per
parameter value, no fold). Every other model (`None`, the default) is walked on its
own tendency, held at time `t` (`problem.ModelProblem`).
"""


def on_the_surface(params, parameter: str, model, grid, start, t):
    """`(params, model, start, t)` for the walk: for a model walked as a zonal
    model (`walked_model`: the zonal model itself, the surface of an
    `ebm.DeepOceanModel`) that model's, with `t` then `None`; for any other model
    its own, with the time whose forcing is held.

    **Raises:**

    - `ValueError`: for `t` with a model forced by a parameter (the zonal model's
        `forcing`), `grid` with a model that carries its own, a parameter that
        does not move a deep-ocean model's steady state, or a model with no folds
        to walk (the global layer models).
    - `TypeError`: for a `model` that is not an ebm model, or parameters that are
        not the model's.
    """
    from ..._stepping.run import check_model_params
    from ..._zonal.start import resolve_any_model
    from ..steady_state import held_time

    model = resolve_any_model(model, grid)
    params = check_model_params(params, model)
    t = held_time(model, t)
    walked = model.walked_model(params, parameter, t, start)
    if walked is None:
        return params, model, start, t
    return (*walked, None)
