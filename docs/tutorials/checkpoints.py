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
# # What a checkpointed gradient stores, and what more checkpoints buy
#
# Reverse mode runs the adjoint backwards through the steps, and each backward step
# needs the forward state at that step. Plain reverse mode stores every step's
# intermediates; diffrax's `RecursiveCheckpointAdjoint` stores the state at a fixed
# number of checkpoints and recomputes the steps between them in the backward pass.
# This notebook looks at what each stores, with
# `jax.ad_checkpoint.print_saved_residuals`, then times the gradient with few and
# with many checkpoints.

# %%
import collections
import contextlib
import io
import textwrap
import time

import jax
import matplotlib.pyplot as plt
import numpy as np
from jax.ad_checkpoint import print_saved_residuals

import ebm


params = ebm.Params()
grid = ebm.Grid(30)
DT = 0.05  # years: fixed implicit-explicit steps of 18 days


def global_mean_after(steps, checkpoint):
    def loss(params):
        run = ebm.integrate_fixed(
            params, dt=DT, steps=steps, grid=grid, checkpoint=checkpoint
        )
        return run.global_mean

    return loss


# %% [markdown]
# ## What is stored
#
# `print_saved_residuals(f, x)` lists every array that reverse mode keeps from the
# forward pass of `f` for the backward pass, one line each with its dtype and
# shape. Over six steps the lists are long, so they are counted by shape here.


# %%
def saved_residuals(loss):
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        print_saved_residuals(loss, params)
    return collections.Counter(line.split()[0] for line in text.getvalue().splitlines())


STEPS = 6
stored = {
    "plain (checkpoint='none')": saved_residuals(global_mean_after(STEPS, "none")),
    "2 checkpoints": saved_residuals(global_mean_after(STEPS, ("recursive", 2))),
    "5 checkpoints": saved_residuals(global_mean_after(STEPS, ("recursive", 5))),
}
for label, shapes in stored.items():
    print(f"{label}: {sum(shapes.values())} arrays")
    counts = ", ".join(f"{n} x {shape}" for shape, n in sorted(shapes.items()))
    print(textwrap.fill(counts, 84, initial_indent="    ", subsequent_indent="    "))

# %% [markdown]
# How to read the lists:
#
# - Plain reverse mode stores arrays with a leading dimension of 6, one slice per
#   step: the intermediates of each step, `f64[6,30]` on the 30 cells and
#   `f64[6,60]` / `f64[6,61]` on the 60 half-cells where the ice albedo is
#   evaluated, with their masks (`bool[6,...]`).
# - With $k$ checkpoints nothing has a leading dimension of 6. The buffers of
#   length $k$ are the checkpoints: `f64[k,30]` twice, for the two profiles the loop
#   carries (the temperature and the running error estimate), `f64[k]` for the
#   largest error so far, and the integer and boolean arrays of length $k$ for the
#   loop's counters and flags: each checkpoint is the loop's whole state at one
#   step.
# - Common to all: the implicit diffusion operator, built once per run (`f64[3,30]`
#   and `f64[3,31]`, the tridiagonal matrix and its coefficients on cell edges), and
#   the pivots of its factorisation (`i32[29,2]`, `i32[30,2]`).


# %%
def leading_sizes(shapes):
    return {int(shape.split("[")[1].split(",")[0]) for shape in shapes if "," in shape}


assert STEPS in leading_sizes(stored["plain (checkpoint='none')"])
for k in (2, 5):
    shapes = stored[f"{k} checkpoints"]
    assert STEPS not in leading_sizes(shapes)
    assert shapes[f"f64[{k},30]"] == 2

# %% [markdown]
# ## More checkpoints, less recomputation
#
# With $k$ checkpoints over $N$ steps, the backward pass re-runs the steps between
# checkpoints, and re-checkpoints inside each stretch as it goes (Stumm and
# Walther's online treeverse). With few checkpoints a step is recomputed many
# times; with $k \ge N$ every step's state is a checkpoint, and each step is re-run
# once, to rebuild its intermediates while it is reversed. The memory is $k$
# states. Over 400 steps, with 4 and with 64 checkpoints (compiled ahead of time,
# so that one executable gives the time, the memory and the gradient):

# %%
LONG = 400


def seconds(compiled, repeats=5):
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        jax.block_until_ready(compiled(params))
        times.append(time.perf_counter() - begin)
    return min(times)


runs = {}
for k in (4, 64):
    loss = global_mean_after(LONG, ("recursive", k))
    compiled = jax.jit(jax.grad(loss)).lower(params).compile()
    memory = ebm.CompiledMemory.of(compiled).temporary_megabytes
    runs[k] = (compiled(params), seconds(compiled), memory)
    print(
        f"{k:3d} checkpoints: gradient in {runs[k][1] * 1e3:6.1f} ms, "
        f"XLA temporary memory {memory:.4f} MB"
    )

# %% [markdown]
# The gradients are the same, whatever the schedule: checkpointing changes what is
# recomputed, not what is computed. The memory grows with the number of
# checkpoints; the time falls (on a shared machine the times are noisy: compare
# them as a ratio, and see [Choosing an adjoint](../adjoints.html) for measurements
# up to a million steps).

# %%
for name in ("S0", "D", "B"):
    np.testing.assert_allclose(
        getattr(runs[4][0], name), getattr(runs[64][0], name), rtol=1e-12
    )
assert runs[64][2] > runs[4][2]
print(f"time, 4 over 64 checkpoints: {runs[4][1] / runs[64][1]:.2f}x")
print(f"memory, 64 over 4 checkpoints: {runs[64][2] / runs[4][2]:.2f}x")

figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3))
labels = [f"{k} checkpoints" for k in runs]
left.bar(labels, [run[1] * 1e3 for run in runs.values()])
left.set_ylabel("gradient time (ms)")
right.bar(labels, [run[2] for run in runs.values()])
right.set_ylabel("XLA temporary memory (MB)")
figure.suptitle(f"d(global mean)/d(parameters) over {LONG} steps, 30 cells")
figure.tight_layout()
plt.show()
