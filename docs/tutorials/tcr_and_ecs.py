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
# # TCR and ECS, and what they depend on
#
# The transient climate response (TCR, the warming around CO2 doubling under a 1 %
# a year increase) and the equilibrium climate sensitivity (ECS, the warming once
# the deep ocean has caught up) of the two-layer model, with their derivatives with
# respect to every parameter, and the spread of TCR over an ensemble of a thousand
# ocean configurations in one call.

# %%
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt

import ebm


model = ebm.TwoLayerModel()
params = model.Params(efficacy=1.3)
params

# %% [markdown]
# ECS is a steady state: Newton's method on the tendency, differentiated
# implicitly. It is $F_{2x}/\lambda$ whatever the ocean, and its gradient says so:
# zero in the heat capacities, the exchange coefficient and the efficacy.

# %%
ecs, d_ecs = jax.value_and_grad(lambda p: ebm.ecs(p, model))(params)
ratio = float(params.F2x / params.feedback)
print(f"ECS = {float(ecs):.4f} K (F2x / feedback = {ratio:.4f})")
for name in params.field_names():
    print(f"  d ECS / d {name:<9s} {float(getattr(d_ecs, name)): .5f}")
assert abs(float(ecs) - float(params.F2x / params.feedback)) < 1e-10
for name in ("gamma", "C", "C_deep", "efficacy"):
    assert abs(float(getattr(d_ecs, name))) < 1e-10

# %% [markdown]
# TCR is a run: 80 years of 1pctCO2, the warming averaged over years 61-80, and
# reverse mode through the run. Unlike ECS it depends on the ocean: more exchange
# with the deep ocean ($\gamma$), or a larger efficacy, means less transient
# warming.

# %%
tcr, d_tcr = jax.value_and_grad(lambda p: ebm.tcr(p, model))(params)
print(f"TCR = {float(tcr):.4f} K, TCR/ECS = {float(tcr / ecs):.3f}")
for name in params.field_names():
    print(f"  d TCR / d {name:<9s} {float(getattr(d_tcr, name)): .5f}")
assert float(d_tcr.gamma) < 0 and float(d_tcr.efficacy) < 0 and float(d_tcr.F2x) > 0

# %% [markdown]
# The derivative in $\gamma$ against central finite differences:

# %%
step = 1e-5
moved = [
    ebm.tcr(model.Params(efficacy=1.3, gamma=0.73 + s), model) for s in (step, -step)
]
difference = float(moved[0] - moved[1]) / (2 * step)
print(f"reverse mode {float(d_tcr.gamma):.8f}, central differences {difference:.8f}")
assert abs(difference - float(d_tcr.gamma)) < 1e-6 * abs(difference)

# %% [markdown]
# A thousand ocean configurations (exchange coefficient and deep heat capacity
# drawn uniformly) in one `jax.vmap`, each with its TCR and its gradient:

# %%
key_gamma, key_depth = jax.random.split(jax.random.key(0))
gammas = jax.random.uniform(key_gamma, (1000,), minval=0.4, maxval=1.2)
depths = jax.random.uniform(key_depth, (1000,), minval=50.0, maxval=200.0)


@jax.jit
@jax.vmap
def member(gamma, C_deep):
    p = model.Params(efficacy=1.3, gamma=gamma, C_deep=C_deep)
    return jax.value_and_grad(lambda p: ebm.tcr(p, model))(p)


tcrs, gradients = member(gammas, depths)
print(f"TCR: {float(jnp.min(tcrs)):.2f} to {float(jnp.max(tcrs)):.2f} K")
assert bool(jnp.all(gradients.gamma < 0))

figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
points = left.scatter(gammas, tcrs, c=depths, s=6)
figure.colorbar(points, ax=left, label="C_deep (W yr m-2 K-1)")
left.set_xlabel("gamma (W m-2 K-1)")
left.set_ylabel("TCR (K)")
right.scatter(gammas, gradients.gamma, c=depths, s=6)
right.set_xlabel("gamma (W m-2 K-1)")
right.set_ylabel("d TCR / d gamma (K per W m-2 K-1)")
plt.show()
