"""A root-finder that tells a progress meter of each of its steps."""

import diffrax
import equinox as eqx
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, Int, PyTree


class CountedRootFinder(optx.AbstractRootFinder):
    """`solver`, telling `meter` of each of its steps, out of `max_steps`."""

    solver: optx.AbstractRootFinder
    meter: diffrax.AbstractProgressMeter
    max_steps: int

    @property
    def rtol(self):
        return self.solver.rtol

    @property
    def atol(self):
        return self.solver.atol

    @property
    def norm(self):
        return self.solver.norm

    def init(self, fn, y, args, options, f_struct, aux_struct, tags):
        state = self.solver.init(fn, y, args, options, f_struct, aux_struct, tags)
        return CountedState(state, jnp.array(0), self.meter.init())

    def step(self, fn, y, args, options, state: "CountedState", tags):
        y, inner, aux = self.solver.step(fn, y, args, options, state.inner, tags)
        count = state.count + 1
        meter_state = self.meter.step(state.meter_state, count / self.max_steps)
        return y, CountedState(inner, count, meter_state), aux

    def terminate(self, fn, y, args, options, state: "CountedState", tags):
        return self.solver.terminate(fn, y, args, options, state.inner, tags)

    def postprocess(
        self, fn, y, aux, args, options, state: "CountedState", tags, result
    ):
        self.meter.close(state.meter_state)
        return self.solver.postprocess(
            fn, y, aux, args, options, state.inner, tags, result
        )


class CountedState(eqx.Module):
    inner: PyTree
    count: Int[Array, ""]
    meter_state: PyTree
