"""The posterior of the historical calibration two ways: NUTS with the gradient
through the run, and importance weights on a large prior ensemble (FaIR's way),
with one likelihood.

The problem is `examples/historical_calibration.py`'s: the two-layer model under
AR6's historical forcing against AR6's assessed warming of 1850-2019, six
parameters with log-normal priors, the noise's sigma sampled too, AR(1) residuals
(rho 0.5) from the 1850-1900 mean. NUTS is `ebm.posterior`; the ensemble draws
`--members` from the same priors (`ebm.sample_prior`, Latin hypercube; sigma by
inverse CDF at stratified uniforms) and weights each by its likelihood under the
NUTS run's own `LogPosterior` (its log density less the log prior), in blocks.
Records the quantiles of ECS, TCR and the parameters from each, the effective
sample sizes, the wall time of each (compilation included) and effective samples
per second (for NUTS, of each parameter, ECS and TCR).

Writes benchmarks/results/importance_vs_nuts.json.

Run: python benchmarks/importance_vs_nuts.py [--members 1000000] [--chains 4]
    [--warmup 500] [--samples 1000]
"""

import argparse
import json
import pathlib
import time


RESULTS = pathlib.Path(__file__).parent / "results"
QUANTILES = (0.05, 0.17, 0.5, 0.83, 0.95)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1_000_000)
    parser.add_argument("--block-size", type=int, default=16_384)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    from _machine import machine

    import ebm

    priors, noise_prior = ebm.historical_priors(), ebm.LogNormal(0.1, 0.5)
    model = ebm.TwoLayerModel(forcing=ebm.HistoricalForcing())
    params = model.Params(F2x=3.93)

    began = time.perf_counter()
    draws = ebm.calibrate_historical(
        params,
        model=model,
        priors=priors,
        noise=noise_prior,
        num_chains=args.chains,
        num_warmup=args.warmup,
        num_samples=args.samples,
        max_doublings=10,
    )
    nuts_seconds = time.perf_counter() - began
    names = (*priors, "ecs", "tcr")
    nuts = {name: [float(draws.quantile(name, q)) for q in QUANTILES] for name in names}
    nuts_ess = {name: float(draws.ess[name]) for name in names}

    # The same likelihood on prior draws: log density (no Jacobian) - log prior.
    log_posterior = draws.log_posterior
    noise_name = "noise_global_mean"

    def log_weight_ecs_tcr(p, noise):
        values = {name: getattr(p, name) for name in priors} | {noise_name: noise}
        coordinates = log_posterior.coordinates(values)
        log_density = log_posterior.log_density(coordinates, jacobian=False)
        log_prior = sum(
            prior.log_density(values[name]) for name, prior in priors.items()
        ) + noise_prior.log_density(noise)
        return log_density - log_prior, ebm.ecs(p, model), ebm.tcr(p, model)

    batched = jax.jit(jax.vmap(log_weight_ecs_tcr))
    began = time.perf_counter()
    members = ebm.sample_prior(priors, params, args.members, seed=2)
    rng = np.random.default_rng(3)
    u = (rng.permutation(args.members) + rng.random(args.members)) / args.members
    noise = np.asarray(noise_prior.quantile(jnp.asarray(u)))
    pieces = []
    for start in range(0, args.members, args.block_size):
        # (Every field of the members has one value per member.)
        block = jax.tree.map(lambda x: x[start : start + args.block_size], members)
        outputs = batched(block, noise[start : start + args.block_size])
        pieces.append([np.asarray(x) for x in outputs])
    log_w, ecs, tcr = (np.concatenate(parts) for parts in zip(*pieces))
    weighted = ebm.constrain(
        {"log_weight": log_w}, {"log_weight": ebm.LogDensity(lambda x: x)}
    )
    importance_seconds = time.perf_counter() - began
    outputs = {name: np.asarray(getattr(members, name)) for name in priors}
    outputs |= {"ecs": ecs, "tcr": tcr}
    importance = {
        name: [float(x) for x in weighted.quantile(outputs[name], QUANTILES)]
        for name in names
    }

    record = {
        "machine": machine(),
        "command": "python benchmarks/importance_vs_nuts.py "
        f"--members {args.members} --chains {args.chains} --warmup {args.warmup} "
        f"--samples {args.samples}",
        "quantiles": list(QUANTILES),
        "nuts": {
            "seconds": nuts_seconds,
            "draws": args.chains * args.samples,
            "gradients": draws.num_gradients,
            "divergences": draws.divergences,
            "max_rhat": max(float(draws.rhat[n]) for n in names),
            "ess": nuts_ess,
            "min_ess_per_second": min(nuts_ess.values()) / nuts_seconds,
            "ess_per_second": {n: e / nuts_seconds for n, e in nuts_ess.items()},
            "quantiles": nuts,
        },
        "importance": {
            "seconds": importance_seconds,
            "members": args.members,
            "failed": weighted.failed,
            "effective_size": weighted.effective_size,
            "ess_per_second": weighted.effective_size / importance_seconds,
            "quantiles": importance,
        },
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "importance_vs_nuts.json"
    path.write_text(json.dumps(record, indent=2))
    print(f"NUTS: {nuts_seconds:.0f} s, min ESS {min(nuts_ess.values()):.0f}")
    for name, ess in nuts_ess.items():
        print(f"  {name:18s} ESS {ess:7.0f}, {ess / nuts_seconds:7.1f} per second")
    print(
        f"importance: {importance_seconds:.0f} s, ESS {weighted.effective_size:.0f} "
        f"of {args.members:,}"
    )
    for name in names:
        print(f"{name:14s} NUTS " + " ".join(f"{x:7.3f}" for x in nuts[name]))
        print(f"{'':14s} IS   " + " ".join(f"{x:7.3f}" for x in importance[name]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
