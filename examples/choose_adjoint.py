"""The same gradient through a 50-year run under each adjoint: time, memory, agreement.

d(final global-mean temperature)/d(parameters) after 50 years from the present-day
profile, under every adjoint `ebm.integrate` offers, against the implicit gradient of
the equilibrium (which the 50-year run has all but reached). Reverse-mode adjoints
use `jax.grad`, forward-mode ones `jax.jacfwd` (one tangent per parameter).
Memory is XLA's temporary-buffer figure for the compiled gradient; run time and
memory of each are drawn as bars (choose_adjoint.png).

Run: python examples/choose_adjoint.py [--years 50] [--fast]
"""

import argparse
import time

import equinox as eqx
import jax
import jax.numpy as jnp

import ebm


def flat(tree):
    return jnp.stack(jax.tree.leaves(tree))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--years", type=float, default=50.0)
    parser.add_argument("--plot", default="choose_adjoint.png")
    parser.add_argument(
        "--fast", action="store_true", help="a 2-year run, without 'direct'"
    )
    arguments = parser.parse_args()
    years = 2.0 if arguments.fast else arguments.years
    params = ebm.Params()

    def final_mean(adjoint):
        return lambda p: ebm.integrate(p, years=years, adjoint=adjoint).global_mean

    reference = flat(jax.grad(lambda p: ebm.equilibrium(p).global_mean)(params))
    count = len(ebm.Params.field_names())
    print(f"gradient of the global mean after {years:g} years, all {count} parameters")
    print(
        f"{'adjoint':10s} {'mode':8s} {'compile s':>9s} {'run s':>8s} "
        f"{'temp MB':>8s} {'max |diff| vs recursive':>24s}"
    )
    rows, measured = {}, []
    adjoints = (
        ("recursive", jax.grad),
        ("direct", jax.grad),
        ("forward", jax.jacfwd),
        ("direct", jax.jacfwd),
        ("backsolve", jax.grad),
    )
    if arguments.fast:  # the direct adjoint's compilations are the slowest
        adjoints = tuple(item for item in adjoints if item[0] != "direct")
    for name, transform in adjoints:
        mode = "reverse" if transform is jax.grad else "forward"
        if name == "backsolve":
            # Backsolve refuses a run longer than its horizon, by design. Called
            # with values (not under jit), ebm says so before compiling anything.
            try:
                ebm.integrate(params, years=years, adjoint=name)
            except eqx.EquinoxRuntimeError as error:
                print(f"{name:10s} {mode:8s} refused: {error}")
                continue
        fn = transform(final_mean(name))
        start = time.perf_counter()
        compiled = jax.jit(fn).lower(params).compile()
        compile_seconds = time.perf_counter() - start
        start = time.perf_counter()
        gradient = jax.block_until_ready(compiled(params))
        run_seconds = time.perf_counter() - start
        memory = compiled.memory_analysis().temp_size_in_bytes / 1e6
        rows[(name, mode)] = flat(gradient)
        base = rows.get(("recursive", "reverse"), flat(gradient))
        difference = float(jnp.max(jnp.abs(flat(gradient) - base)))
        print(
            f"{name:10s} {mode:8s} {compile_seconds:9.2f} {run_seconds:8.3f} "
            f"{memory:8.2f} {difference:24.2e}"
        )
        measured.append((f"{name}\n{mode}", run_seconds, memory))
    recursive = rows[("recursive", "reverse")]
    print(
        "max |recursive - implicit equilibrium gradient| = "
        f"{float(jnp.max(jnp.abs(recursive - reference))):.2e} (the run is "
        f"{years:g} years from equilibrium)"
    )
    plot(measured, years, arguments.plot)
    print(f"wrote {arguments.plot}")


def plot(measured, years, path):
    from ebm._edges.plot import _pyplot

    plt = _pyplot()
    fig, (time_ax, memory_ax) = plt.subplots(
        1, 2, figsize=(10, 4), layout="constrained"
    )
    labels = [label for label, _, _ in measured]
    time_ax.bar(labels, [seconds for _, seconds, _ in measured])
    time_ax.set_ylabel("gradient run time (s)")
    memory_ax.bar(labels, [memory for _, _, memory in measured], color="tab:orange")
    memory_ax.set_ylabel("XLA temporary memory (MB)")
    fig.suptitle(f"one gradient through a {years:g}-year run, by adjoint")
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
