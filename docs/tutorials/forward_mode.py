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
# # Forward mode: many outputs, few inputs, flat memory
#
# How does the whole temperature profile at the end of a run respond to the solar
# constant and to the diffusivity? That is a Jacobian with one row per latitude and
# two columns. Reverse mode (`jax.jacrev`) computes it one row at a time, each row a
# backward pass through the run that needs the forward states in reverse order, so
# it must store them (or recompute them). Forward mode (`jax.jacfwd`) computes it one
# column at a time, carrying the tangent $dT/dp$ along with $T$ step by step: nothing
# is stored, and its memory does not grow with the run's length. With fewer inputs
# than outputs, forward mode also makes fewer passes.

# %%
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import ebm


params = ebm.Params()
grid = ebm.Grid(30)
DT = 0.05  # years: fixed implicit-explicit steps of 18 days
LENGTHS = (400, 3200)  # steps: 20 and 160 years


def final_profile(inputs, steps):
    """The final temperature profile (30 cells) for (S0, D) = `inputs`."""
    S0, D = inputs
    changed = eqx.tree_at(lambda p: (p.S0, p.D), params, (S0, D))
    run = ebm.integrate_fixed(changed, dt=DT, steps=steps, grid=grid, checkpoint="none")
    return run.T


inputs = jnp.stack([params.S0, params.D])

# %% [markdown]
# Both Jacobians, compiled ahead of time for each run length. `checkpoint="none"`
# is plain differentiation of the loop: reverse mode stores every step's
# intermediates (the cure, checkpointing, is the next notebook), forward mode
# stores nothing. The compiled executables give XLA's temporary memory, the run
# time, and the Jacobians themselves.


# %%
def compile_jacobian(jacobian, steps):
    return jax.jit(jacobian(lambda x: final_profile(x, steps))).lower(inputs).compile()


def seconds(compiled, repeats=5):
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        jax.block_until_ready(compiled(inputs))
        times.append(time.perf_counter() - begin)
    return min(times)


rows = {}
for steps in LENGTHS:
    for mode, jacobian in (("forward", jax.jacfwd), ("reverse", jax.jacrev)):
        compiled = compile_jacobian(jacobian, steps)
        memory = ebm.CompiledMemory.of(compiled).temporary_megabytes
        rows[mode, steps] = (compiled(inputs), seconds(compiled), memory)
        print(
            f"{steps:5d} steps, {mode:>7}: {rows[mode, steps][1] * 1e3:7.1f} ms, "
            f"XLA temporary memory {memory:8.3f} MB"
        )

# %% [markdown]
# The two modes compute the same Jacobian, to rounding:

# %%
for steps in LENGTHS:
    forward, reverse = rows["forward", steps][0], rows["reverse", steps][0]
    difference = float(jnp.max(jnp.abs(forward - reverse)))
    print(f"{steps} steps: largest difference {difference:.1e} K per unit input")
    np.testing.assert_allclose(forward, reverse, rtol=1e-10, atol=1e-12)

# %% [markdown]
# ## Memory against the run's length
#
# Eight times the steps: forward mode's memory stays where it was, reverse mode's
# grows with the number of steps it has to remember.

# %%
forward_growth = rows["forward", LENGTHS[1]][2] / rows["forward", LENGTHS[0]][2]
reverse_growth = rows["reverse", LENGTHS[1]][2] / rows["reverse", LENGTHS[0]][2]
print(f"memory growth over {LENGTHS[1] // LENGTHS[0]}x the steps:")
print(f"  forward {forward_growth:.2f}x, reverse {reverse_growth:.2f}x")
assert forward_growth < 1.01
assert reverse_growth > 0.8 * LENGTHS[1] / LENGTHS[0]

# %% [markdown]
# ## Reading the Jacobian
#
# Each column is the sensitivity of the final profile to one input, in K per unit
# of that input, after 160 years, by which time the model is at equilibrium. More
# sunlight warms everywhere, most where it moves the ice edge; more diffusion cools
# the tropics and warms the poles.

# %%
jacobian = rows["forward", LENGTHS[1]][0]
figure, axes = plt.subplots(1, 2, figsize=(8, 3), sharex=True)
for column, (axis, label) in enumerate(
    zip(axes, ("dT/dS0 (K per W m-2)", "dT/dD (K per W m-2 K-1)"))
):
    axis.plot(grid.lat, jacobian[:, column])
    axis.axhline(0.0, color="grey", linewidth=0.5)
    axis.set_xlabel("latitude")
    axis.set_title(label)
figure.tight_layout()
plt.show()

# %% [markdown]
# ## Which to choose
#
# Forward mode costs one pass per input and memory independent of the run;
# reverse mode one pass per output, and memory for the trajectory unless it is
# checkpointed. For a handful of parameters and a whole profile (or a whole time
# series) of outputs, forward mode wins on both. For a scalar loss of many
# parameters, as in a fit, reverse mode wins on passes, and checkpointing keeps its
# memory in hand. Adaptive runs have the same choice: `ebm.integrate(...,
# adjoint="forward")` for `jax.jacfwd`, `adjoint="recursive"` (the default) for
# `jax.grad`; the table on [Choosing an adjoint](../adjoints.html) lists what each
# supports.
