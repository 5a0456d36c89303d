# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The gradient of an equilibrium, without the spin-up
#
# How does the present-day climate of the model depend on its parameters? One way
# to answer is to spin the model up from some start until it stops changing, and
# differentiate through every step of the spin-up. `ebm.equilibrium` answers without
# the spin-up: it finds the equilibrium $T^*$ as a root of the energy budget,
# $F(T^*; p) = 0$ (W m-2 in each cell), and differentiates the root itself. This
# notebook computes the same sensitivities both ways, checks them against finite
# differences, and compares what each costs.

# %%
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import ebm


params = ebm.Params()
grid = ebm.Grid(30)  # 30 cells of 3 degrees: small enough to compile in seconds

# %% [markdown]
# ## Two routes to the same derivative
#
# Both functions return the global-mean temperature and the northern ice edge of the
# model's equilibrium climate. The first root-finds; the second integrates 200 years
# from the present-day profile in 4000 fixed implicit-explicit steps of 18 days
# (`ebm.integrate_fixed`), by which time the model has forgotten its start (the
# slowest mode decays over a few years). A fixed point of that step is an exact
# equilibrium whatever the step's length, so the two routes must agree as far as the
# spin-up has converged.

# %%
SPIN_UP_YEARS = 200.0


def climate(state):
    return jnp.stack([state.global_mean, state.ice_edge])


def by_root_find(params):
    return climate(ebm.equilibrium(params, grid=grid))


def by_spin_up(params):
    return climate(
        ebm.integrate_fixed(params, dt=SPIN_UP_YEARS / 4000, steps=4000, grid=grid)
    )


print("root-find:", by_root_find(params))
print("spin-up:  ", by_spin_up(params))

# %% [markdown]
# The Jacobians with respect to every parameter, in reverse mode: `jax.jacrev`
# returns an `ebm.Params` whose leaves have one entry per output (global mean,
# ice edge). Each is compiled once, ahead of time, so that the same executable gives
# the numbers, the run time and XLA's memory figures.


# %%
def compile_jacobian(fn):
    return jax.jit(jax.jacrev(fn)).lower(params).compile()


jacobians = {"root-find": compile_jacobian(by_root_find)}
jacobians["spin-up"] = compile_jacobian(by_spin_up)
implicit = jacobians["root-find"](params)
unrolled = jacobians["spin-up"](params)

print(f"{'parameter':>12} {'output':>12} {'implicit':>14} {'unrolled':>14}  rel. diff")
for name in ebm.Params.field_names():
    for index, output in enumerate(("global mean", "ice edge")):
        a = float(getattr(implicit, name)[index])
        b = float(getattr(unrolled, name)[index])
        relative = f"{abs(a - b) / abs(a):.1e}" if a != 0 else "-"
        print(f"{name:>12} {output:>12} {a:14.7e} {b:14.7e}  {relative}")

# %% [markdown]
# Every sensitivity agrees to seven digits or better, except the mixed layer's
# depth: heat capacity sets how fast the model reaches equilibrium, not where, so
# its implicit derivative is exactly zero, and the spin-up's is what is left of the
# start after 200 years.

# %%
for name in ebm.Params.field_names():
    a, b = getattr(implicit, name), getattr(unrolled, name)
    if name == "water_depth":
        assert np.all(a == 0.0) and np.all(np.abs(b) < 1e-8)
    else:
        np.testing.assert_allclose(b, a, rtol=1e-7)

# %% [markdown]
# ## Finite differences as the referee
#
# Fourth-order central differences of the root-find, for the solar constant and the
# diffusivity. A finite difference is the least accurate of the three: truncation
# grows with the step, and the root-find's tolerance (1e-9 W m-2) divided by the
# step grows as it shrinks. With a relative step of 1e-5 it resolves five digits,
# and those agree with the implicit gradient.


# %%
def central_difference(fn, params, name, relative_step=1e-5):
    value = getattr(params, name)
    step = relative_step * abs(float(value))

    def at(offset):
        return fn(eqx.tree_at(lambda p: getattr(p, name), params, value + offset))

    return (8 * (at(step) - at(-step)) - (at(2 * step) - at(-2 * step))) / (12 * step)


for name in ("S0", "D"):
    finite = central_difference(by_root_find, params, name)
    exact = getattr(implicit, name)
    print(f"{name}: finite difference {finite}, implicit {exact}")
    np.testing.assert_allclose(finite, exact, rtol=1e-5)

# %% [markdown]
# ## Why the root-find needs no trajectory
#
# Differentiate $F(T^*(p); p) = 0$ with respect to $p$:
# $\partial F/\partial T \; dT^*/dp + \partial F/\partial p = 0$, so
#
# $$\frac{dT^*}{dp} = -\left(\frac{\partial F}{\partial T}\right)^{-1}
# \frac{\partial F}{\partial p}.$$
#
# This is the implicit function theorem. It needs only the equilibrium itself: one
# linear solve with the Jacobian $J = \partial F/\partial T$ there (tridiagonal here,
# since each cell talks to its neighbours only), whatever path the root-finder took.
# In reverse mode it is the transposed solve, $J^{\top} \lambda = \bar{T}$, followed
# by one vector-Jacobian product of $F$ with respect to $p$. The spin-up's gradient
# instead runs the adjoint of every step backwards through the 200 years, so the
# states it needs must be stored or recomputed.
#
# The cost of each, once compiled: wall time (on a shared machine; read the ratio)
# and the temporary memory XLA books for the compiled gradient.


# %%
def seconds(compiled, repeats=5):
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        jax.block_until_ready(compiled(params))
        times.append(time.perf_counter() - begin)
    return min(times)


costs = {}
for label, compiled in jacobians.items():
    memory = ebm.CompiledMemory.of(compiled)
    costs[label] = (seconds(compiled), memory.temporary_megabytes)
    print(
        f"{label:>10}: Jacobian in {costs[label][0] * 1e3:7.1f} ms, "
        f"XLA temporary memory {costs[label][1]:.3f} MB"
    )

# %% [markdown]
# The spin-up's reverse pass stores checkpoints of the trajectory (by default about
# $2\sqrt{N}$ states for $N$ steps, see [Choosing an adjoint](../adjoints.html)) and
# re-runs the steps between them, so it costs a few forward runs; the root-find's
# stores the equilibrium and one tridiagonal matrix, and costs one linear solve.
# The spin-up's memory and time grow with the length of the run; the implicit
# gradient's do not depend on how the equilibrium was found.

# %%
assert costs["spin-up"][1] > costs["root-find"][1]

labels = list(costs)
figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3))
left.bar(labels, [costs[label][0] * 1e3 for label in labels])
left.set_ylabel("Jacobian time (ms)")
left.set_yscale("log")
right.bar(labels, [costs[label][1] for label in labels])
right.set_ylabel("XLA temporary memory (MB)")
figure.suptitle("d(global mean, ice edge)/d(parameters), 30 cells")
figure.tight_layout()
plt.show()
