# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The memory cost of differentiating a long simulation
#
# A reverse-mode gradient (`jax.grad`) of a quantity at the end of a run needs the
# model's state at every step, visited backwards: the derivative of step $i$ is
# taken at the state $T_i$. Unless something is done about it, every step's state,
# and the intermediates its derivative needs, are kept from the forward pass until
# the backward pass reaches them. Memory then grows in proportion to the number of
# steps: a 60-cell model that needs a few kilobytes to run needs 90 megabytes
# to differentiate over 876 years of 5-day steps.
#
# A *checkpoint schedule* keeps fewer states and recomputes the missing ones from
# the nearest stored state when the backward pass needs them: memory traded for
# computation. This notebook measures that trade, first on a toy model written in a
# few lines of JAX, then with `ebm`'s own schedules.
#
# The memory figure throughout is XLA's *temporary* memory: the buffers the compiled
# function allocates while it runs, beyond its inputs and outputs, as the compiler
# books them (`memory_analysis().temp_size_in_bytes` of
# `jax.jit(f).lower(...).compile()`; `ebm.CompiledMemory` reads it). Nothing has to
# run to measure it, so a gradient that would not fit in memory can still be
# measured. MB is $10^6$ bytes.

# %%
import math

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt

import ebm


# `import ebm` turns on float64; say so, since the byte counts below depend on it.
assert jax.config.jax_enable_x64

# %% [markdown]
# ## A 60-cell toy model
#
# Budyko-Sellers on 60 cells of equal area (equal steps in $x = \sin\phi$), stepped
# by explicit Euler:
#
# $$C \frac{\partial T}{\partial t} = S(x)\,(1 - \alpha(T)) - (A + BT)
#   + D \frac{\partial}{\partial x}\Big((1 - x^2)\frac{\partial T}{\partial x}\Big),$$
#
# with annual-mean insolation $S(x) = \frac{S_0}{4}(1 + s_2 P_2(x))$
# ($S_0 = 1365.2$ W m-2, $s_2 = -0.48$), a smooth ice albedo
# $\alpha = 0.3 + 0.32\,\frac{1}{2}\big(1 - \tanh\frac{T - T_f}{w}\big)$
# ($T_f = -10$ °C, $w = 5$ K), outgoing longwave $A + BT$ ($A = 210$ W m-2,
# $B = 2$ W m-2 K-1), the heat capacity $C$ of a 10 m ocean mixed layer, no flux
# through the poles, and 5-day steps. The loss is $\overline{T^2}$, the mean over
# cells of the final $T^2$, as a function of the diffusivity $D$.
#
# Explicit Euler with 5-day steps is stable only for $D < C\,\Delta x^2/(2\Delta t)
# \approx 0.054$ W m-2 K-1, a tenth of the usual Budyko-Sellers value; the toy uses
# $D = 0.04$. The memory figures do not depend on $D$'s value, only on the shape of
# the computation. (`ebm`'s own model, in part 2, steps the diffusion implicitly
# and has no such limit.)

# %%
cells = 60
edges = jnp.linspace(-1.0, 1.0, cells + 1)  # cell edges in x = sin(latitude)
x = (edges[1:] + edges[:-1]) / 2
dx = 2.0 / cells
insolation = 1365.2 / 4 * (1 - 0.48 * (3 * x**2 - 1) / 2)
A, B = 210.0, 2.0
heat_capacity = 1000.0 * 4181.3 * 10.0  # J m-2 K-1
dt = 5 * 86_400.0  # s
freezing, width = -10.0, 5.0
T0 = 10.0 - 20.0 * x**2
D = jnp.asarray(0.04)
assert D < heat_capacity * dx**2 / (2 * dt)


def step(T, D):
    albedo = 0.3 + 0.32 * (1 - jnp.tanh((T - freezing) / width)) / 2
    flux = D * (1 - edges[1:-1] ** 2) * jnp.diff(T) / dx  # on interior edges
    flux = jnp.concatenate([jnp.zeros(1), flux, jnp.zeros(1)])  # none at the poles
    tendency = insolation * (1 - albedo) - (A + B * T) + jnp.diff(flux) / dx
    return T + dt / heat_capacity * tendency


def loss(T):
    return jnp.mean(T**2)


# %% [markdown]
# ## Four ways to differentiate the same loop
#
# Each schedule is the same `jax.lax.scan` over the steps, differentiated with
# `jax.grad`; they differ in what the forward pass keeps.
#
# - **plain**: the scan as it is. For each step, JAX keeps whatever the step's
#   derivative needs (its *residuals*).
# - **per-step remat**: the step body under `jax.checkpoint`. Only each step's input
#   $T_i$ is kept; the backward pass re-runs the step to rebuild its residuals.
# - **sqrt-chunked**: the $N$ steps split into about $\sqrt N$ chunks of about
#   $\sqrt N$ steps; an outer scan over chunks, each chunk a `jax.checkpoint`ed
#   inner scan. The forward pass keeps only the state at each chunk boundary; the
#   backward pass re-runs one chunk at a time, keeping that chunk's residuals.
#   Memory $\propto \sqrt N$, each step computed twice.
# - **binomial** (Griewank's *revolve*): $c$ stored states whatever $N$, placed so
#   that the recomputation is the least possible with $c$ slots. Its backward pass is
#   a loop of its own, not a transformation of the scan, so here it is `ebm`'s
#   `BinomialCheckpoint`, whose `loop(step, x0, args, steps)` takes any step
#   function.


# %%
def forward(D, steps):
    T, _ = jax.lax.scan(lambda T, _: (step(T, D), None), T0, length=steps)
    return loss(T)


def plain(D, steps):
    return forward(D, steps)


def per_step_remat(D, steps):
    remat_step = jax.checkpoint(lambda T: step(T, D))
    T, _ = jax.lax.scan(lambda T, _: (remat_step(T), None), T0, length=steps)
    return loss(T)


def chunking(steps):
    """Steps per chunk and chunks: ceil(sqrt(steps)) each way, covering `steps`."""
    chunk = math.isqrt(steps - 1) + 1
    return chunk, -(-steps // chunk)


def sqrt_chunked(D, steps):
    chunk, chunks = chunking(steps)

    @jax.checkpoint
    def run_chunk(T, first):
        def body(T, i):
            # The last chunk may run past `steps`: those steps leave T as it is.
            return jnp.where(first + i < steps, step(T, D), T), None

        T, _ = jax.lax.scan(body, T, jnp.arange(chunk))
        return T

    starts = chunk * jnp.arange(chunks)
    T, _ = jax.lax.scan(lambda T, first: (run_chunk(T, first), None), T0, starts)
    return loss(T)


def binomial(D, steps, checkpoints=8):
    schedule = ebm.BinomialCheckpoint(checkpoints)
    return loss(schedule.loop(lambda i, T, D: step(T, D), T0, D, steps))


schedules = {
    "plain": plain,
    "per-step remat": per_step_remat,
    "sqrt-chunked": sqrt_chunked,
    "binomial (8)": binomial,
}


def measure(fn):
    """XLA's temporary bytes for `fn(D)`, and its value there."""
    compiled = jax.jit(fn).lower(D).compile()
    return ebm.CompiledMemory.of(compiled).temporary_bytes, compiled(D)


# %% [markdown]
# Each schedule is compiled at 1,000, 8,000 and 64,000 steps (14 to 876 years).
# The binomial schedule's memory does not depend on the length, so it is compiled
# at the two ends only: its compilation is the slowest here.

# %%
lengths = (1_000, 8_000, 64_000)
toy = {"forward only": {}} | {name: {} for name in schedules}
gradients = {}
for steps in lengths:
    toy["forward only"][steps], _ = measure(lambda D: forward(D, steps))
    for name, schedule in schedules.items():
        if name.startswith("binomial") and steps not in (lengths[0], lengths[-1]):
            continue
        toy[name][steps], gradient = measure(jax.grad(lambda D: schedule(D, steps)))
        if steps == lengths[0]:
            gradients[name] = gradient

print(f"{'schedule':<16}" + "".join(f"{n:>12,d}" for n in lengths) + "   steps")
for name, row in toy.items():
    cells_ = [f"{row[n] / 1e6:12.4f}" if n in row else f"{'':>12}" for n in lengths]
    print(f"{name:<16}" + "".join(cells_) + "   MB")

# %% [markdown]
# Every schedule gives the same gradient, to rounding: they differ only in what is
# stored and what is recomputed.

# %%
reference = gradients["plain"]
for name, gradient in gradients.items():
    print(f"{name:<16} dL/dD = {float(gradient):.12e}")
    assert jnp.abs(gradient - reference) <= 1e-10 * jnp.abs(reference)

# %% [markdown]
# ### Against the textbook's figures
#
# The textbook that set this package's question measured the same toy at 1,000 and
# 64,000 steps. The figures here reproduce them to within 10%:

# %%
textbook = {  # MB at (1,000, 64,000) steps
    "plain": (1.43, 91.65),
    "per-step remat": (0.48, 30.72),
    "sqrt-chunked": (0.064, 0.487),
}
print(f"{'schedule':<16}{'steps':>8}{'textbook':>11}{'here':>11}{'ratio':>8}")
for name, figures in textbook.items():
    for steps, expected in zip((1_000, 64_000), figures):
        measured = toy[name][steps] / 1e6
        print(
            f"{name:<16}{steps:>8,d}{expected:>9.3f}MB{measured:>9.3f}MB"
            f"{measured / expected:>8.3f}"
        )
        assert abs(measured / expected - 1) < 0.1

# %% [markdown]
# ### What is stored per step
#
# One state is 60 float64 numbers, 480 bytes. Per-step remat stores exactly that per
# step: $64{,}000 \times 480$ B $= 30.72$ MB.
#
# The plain gradient stores 1,432 bytes a step, $60 + 60 + 59 = 179$ numbers: about
# three states. The step is linear in $T$ except for the albedo, so its derivative
# needs only the albedo's $\tanh$ (two arrays of 60 survive XLA's fusion, the
# $\tanh$ and $1 - \tanh$, from which $\partial\alpha/\partial T \propto 1 -
# \tanh^2$ is formed) and, for $\partial/\partial D$, the temperature differences
# between neighbouring cells (59 numbers; the flux is $D$ times them, up to
# constants). JAX's `jax.ad_checkpoint.print_saved_residuals(step, T0, D)` lists
# them; arrays that depend only on the grid are computed once, outside the loop.
#
# The sqrt-chunked gradient stores one state per chunk boundary plus, while one
# chunk is re-run, that chunk's plain residuals: with chunks of $c =
# \lceil\sqrt N\rceil$ steps and $\lceil N/c \rceil$ chunks, $480\lceil N/c\rceil +
# 1432\,c$ bytes plus a few kilobytes of fixed cost. At 64,000 steps, 253 chunks of
# 253 steps: $480 \times 253 + 1432 \times 253 = 0.484$ MB, about 1,000 states.

# %%
per_step = {
    name: (toy[name][64_000] - toy[name][1_000]) / 63_000
    for name in ("plain", "per-step remat")
}
print(f"bytes a step: {per_step}")
assert per_step["per-step remat"] == 60 * 8
assert per_step["plain"] == (60 + 60 + 59) * 8

for steps in lengths:
    chunk, chunks = chunking(steps)
    predicted = chunks * 60 * 8 + chunk * per_step["plain"]
    measured = toy["sqrt-chunked"][steps]
    print(f"{steps:>7,d} steps: {chunks} chunks of {chunk}; ", end="")
    print(f"predicted {predicted / 1e6:.4f} MB, measured {measured / 1e6:.4f} MB")
    assert 0 <= measured - predicted < 10_000

# The binomial schedule's memory is the same at every length.
assert toy["binomial (8)"][1_000] == toy["binomial (8)"][64_000]

# %%
fig, ax = plt.subplots(figsize=(6, 4.5), layout="constrained")
for name, row in toy.items():
    ax.loglog(list(row), [b / 1e6 for b in row.values()], "o-", label=name)
ax.set_xlabel("steps (5 days each)")
ax.set_ylabel("XLA temporary memory (MB)")
ax.set_title("Gradient of the 60-cell toy with respect to D")
ax.legend()
plt.show()

# %% [markdown]
# On a log-log plot the plain and per-step lines have slope 1 (memory $\propto N$),
# three states a step against one; sqrt-chunked has slope 1/2; binomial and the
# forward pass are flat. The price is computation: per-step remat and sqrt-chunked
# run each step twice (the chunked one once forward, once more in the backward
# pass), and binomial with 8 slots at 64,000 steps runs each step several times.
#
# ## The package's own schedules
#
# `ebm.integrate_fixed(params, dt=..., steps=..., checkpoint=...)` takes fixed
# steps of its model (60 cells, diffusion implicit, so 5-day steps are stable at
# the usual $D$), and `checkpoint=` picks the schedule:
#
# | schedule | `checkpoint=` | stores | recomputes |
# |---|---|---|---|
# | plain | `"none"` | every step's residuals | nothing |
# | per-step remat | `"step"` | one state a step | once |
# | sqrt-chunked | `"sqrt"` (default) | $\sqrt N$ states + a chunk's residuals | once |
# | $k$ levels | `("nested", k)` | about $k N^{1/k}$ states | each step $k - 1$ times |
# | binomial | `("binomial", c)` | $c$ states | the fewest steps that $c$ allow |
# | diffrax's | `("recursive", c)` | $c$ states | more than binomial |
#
# `"none"`, `"step"` and `"sqrt"` go through every JAX transformation (`jvp`,
# `jacfwd`, `grad` of `grad`); the binomial and recursive schedules are reverse-mode
# only. `ebm.memory_table` measures them all (and times them: slow, see
# `benchmarks/memory.py`). Here `ebm.compiled_memory` measures three on the
# default model at 64,000 steps, the toy's longest run; one length is enough, since
# the toy showed how each grows, and compiling the full model is what takes the
# time. Its default albedo integrates the ice edge over each cell, so its plain
# gradient stores far more per step than the toy's, and its `"sqrt"` memory is
# mostly the residuals of the one chunk being re-run.

# %%
params = ebm.Params()
steps = 64_000
package = {}
for checkpoint in ("none", "sqrt", ("binomial", 8)):

    def global_mean(params, checkpoint=checkpoint):
        run = ebm.integrate_fixed(
            params, dt=5 / 365.25, steps=steps, checkpoint=checkpoint
        )
        return run.global_mean

    package[checkpoint] = ebm.compiled_memory(jax.grad(global_mean), params)

print(f"{'checkpoint=':<18}{'MB':>10}{'bytes a step':>14}   ({steps:,d} steps)")
for checkpoint, memory in package.items():
    print(
        f"{checkpoint!r:<18}{memory.temporary_megabytes:10.3f}"
        f"{memory.temporary_bytes / steps:14.1f}"
    )

# %%
fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
labels = [repr(checkpoint) for checkpoint in package]
ax.bar(labels, [memory.temporary_megabytes for memory in package.values()])
ax.set_yscale("log")
ax.set_xlabel("checkpoint=")
ax.set_ylabel("XLA temporary memory (MB)")
ax.set_title(f"jax.grad of ebm.integrate_fixed, {steps:,d} steps of 5 days")
plt.show()

# %%
none, sqrt_, binomial_8 = (memory.temporary_bytes for memory in package.values())
assert binomial_8 < sqrt_ < none
# The full model's plain gradient keeps more a step than the toy's 1,432 bytes.
assert none / steps > per_step["plain"]
# The default schedule needs a small fraction of the plain gradient's memory.
assert sqrt_ < none / 50

# %% [markdown]
# **Which to use.** For a few thousand steps, `"none"` is fastest and fits. For
# longer runs the default `"sqrt"` keeps memory at $O(\sqrt N)$ for about the cost
# of one more forward pass, and goes through every transformation. When even that
# is too much, `("binomial", c)` fixes the memory at $c$ states and pays in
# recomputation, more the fewer slots it has. For a steady state, do not
# differentiate a spin-up at all: `ebm.equilibrium` differentiates the equilibrium
# implicitly, with one linear solve.
