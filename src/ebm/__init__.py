"""ebm: differentiable energy-balance climate models in JAX.

Importing `ebm` turns on JAX's float64 mode (`jax_enable_x64`): equilibria are
converged to 1e-9 W m-2 and gradients are checked to 1e-6, which float32 cannot
resolve. Set `jax.config.update("jax_enable_x64", False)` after import to opt out,
at your own risk. It changes no other JAX setting, unless `EBM_COMPILATION_CACHE`
asks it to keep compiled programs on disk (see `ebm.enable_compilation_cache`).
"""

# The imports follow the float64 switch, which must come first.
# ruff: noqa: E402

import jax


jax.config.update("jax_enable_x64", True)

from ._analysis.calibration import (
    AR6_RANGES as AR6_RANGES,
    calibrate_historical as calibrate_historical,
    historical_priors as historical_priors,
    historical_warming as historical_warming,
    predictive_warming as predictive_warming,
)
from ._analysis.derived import (
    ClimateSensitivity as ClimateSensitivity,
    SnowballFold as SnowballFold,
)
from ._analysis.emulate import Emulation as Emulation, emulate as emulate
from ._analysis.ensemble import (
    Ensemble as Ensemble,
    EnsembleFailureWarning as EnsembleFailureWarning,
    ensemble as ensemble,
    sweep as sweep,
)
from ._analysis.fit import FitResult as FitResult, fit as fit
from ._analysis.log_posterior import LogPosterior as LogPosterior
from ._analysis.posterior import Posterior as Posterior, posterior as posterior
from ._analysis.prior_ensemble import (
    Constrained as Constrained,
    constrain as constrain,
    sample_prior as sample_prior,
)
from ._analysis.priors import (
    AbstractPrior as AbstractPrior,
    LogDensity as LogDensity,
    LogNormal as LogNormal,
    Normal as Normal,
    Uniform as Uniform,
)
from ._analysis.project import (
    AR6_PROJECTIONS as AR6_PROJECTIONS,
    Projection as Projection,
    WarmingGradient as WarmingGradient,
    project as project,
    warming_gradient as warming_gradient,
)
from ._analysis.sensitivity import (
    Hessian as Hessian,
    Sensitivity as Sensitivity,
    hessian as hessian,
    sensitivity as sensitivity,
)
from ._deep_ocean.model import DeepOceanModel as DeepOceanModel
from ._edges import cache as _cache
from ._edges.cache import (
    CompilationCacheWarning as CompilationCacheWarning,
    clear_compilation_cache as clear_compilation_cache,
    enable_compilation_cache as enable_compilation_cache,
)
from ._edges.io import (
    load as load,
    save as save,
    to_dataset as to_dataset,
)
from ._edges.plot import (
    plot_branch as plot_branch,
    plot_equilibrium as plot_equilibrium,
    plot_fit as plot_fit,
    plot_heat_transport as plot_heat_transport,
    plot_memory_scaling as plot_memory_scaling,
    plot_seasonal_cycle as plot_seasonal_cycle,
    plot_sensitivity as plot_sensitivity,
    plot_trajectory as plot_trajectory,
)
from ._edges.plot_calibration import plot_calibration as plot_calibration
from ._edges.plot_projection import (
    plot_emulation as plot_emulation,
    plot_projection as plot_projection,
)
from ._edges.plot_run import plot_gregory as plot_gregory, plot_run as plot_run
from ._layers.base import AbstractLayerModel as AbstractLayerModel
from ._layers.metrics import (
    Gregory as Gregory,
    RegimeChangeWarning as RegimeChangeWarning,
    ecs as ecs,
    gregory as gregory,
    heat_uptake_efficiency as heat_uptake_efficiency,
    polar_amplification as polar_amplification,
    tcr as tcr,
)
from ._layers.n_layer import NLayerModel as NLayerModel
from ._layers.two_layer import (
    TwoLayerModel as TwoLayerModel,
    TwoLayerParams as TwoLayerParams,
)
from ._model.declarations import Constraint as Constraint, Parameter as Parameter
from ._model.parameters import (
    AbstractParams as AbstractParams,
    params_class as params_class,
)
from ._model.protocol import (
    AbstractModel as AbstractModel,
    Coordinate as Coordinate,
    Variable as Variable,
)
from ._numerics.pseudo_transient import (
    PseudoTransientContinuation as PseudoTransientContinuation,
)
from ._numerics.tridiagonal import (
    ProbedTridiagonal as ProbedTridiagonal,
    TridiagonalPreconditionedGMRES as TridiagonalPreconditionedGMRES,
)
from ._results import RESULTS as RESULTS
from ._scenarios.base import (
    AbruptCO2 as AbruptCO2,
    AbstractScenario as AbstractScenario,
    ForcingSeries as ForcingSeries,
    OnePercentCO2 as OnePercentCO2,
)
from ._scenarios.cmip6 import (
    cmip6_models as cmip6_models,
    cmip6_run as cmip6_run,
    cmip6_tuning as cmip6_tuning,
)
from ._scenarios.historical import (
    AbstractAerosolScaledForcing as AbstractAerosolScaledForcing,
    HistoricalForcing as HistoricalForcing,
    forcing_components as forcing_components,
    observed_warming as observed_warming,
)
from ._scenarios.ssp import (
    SSP_SCENARIOS as SSP_SCENARIOS,
    SSPForcing as SSPForcing,
    ssp_forcing_range as ssp_forcing_range,
)
from ._seaice.metrics import (
    ice_free_forcing as ice_free_forcing,
    summer_ice_edge as summer_ice_edge,
)
from ._seaice.model import SeaIceModel as SeaIceModel, SeaIceParams as SeaIceParams
from ._seaice.plot import plot_sea_ice as plot_sea_ice
from ._seaice.stepper import SeaIceEuler as SeaIceEuler
from ._steady.continuation import (
    Branch as Branch,
    Fold as Fold,
    continuation as continuation,
    fold as fold,
)
from ._steady.equilibrium import (
    Equilibrium as Equilibrium,
    NearFoldWarning as NearFoldWarning,
    equilibrium as equilibrium,
)
from ._steady.periodic_continuation import (
    PeriodicBranch as PeriodicBranch,
    periodic_continuation as periodic_continuation,
)
from ._steady.periodic_models import PeriodicState as PeriodicState
from ._steady.periodic_sweep import periodic_sweep as periodic_sweep
from ._steady.seasonal import (
    periodic_equilibrium as periodic_equilibrium,
    seasonal_model as seasonal_model,
    seasonal_spinup as seasonal_spinup,
)
from ._steady.steady_state import SteadyState as SteadyState
from ._stepping.checkpoints import (
    AbstractCheckpoint as AbstractCheckpoint,
    BinomialCheckpoint as BinomialCheckpoint,
    NestedCheckpoint as NestedCheckpoint,
    NoCheckpoint as NoCheckpoint,
    RecursiveCheckpoint as RecursiveCheckpoint,
    StepCheckpoint as StepCheckpoint,
)
from ._stepping.integrate import (
    integrate as integrate,
    integrate_fixed as integrate_fixed,
)
from ._stepping.interpolating import InterpolatingAdjoint as InterpolatingAdjoint
from ._stepping.memory import (
    CompiledMemory as CompiledMemory,
    compiled_memory as compiled_memory,
    memory_table as memory_table,
)
from ._stepping.run import Run as Run
from ._stepping.steppers import (
    AbstractStepper as AbstractStepper,
    ExplicitEuler as ExplicitEuler,
    IMEXEuler as IMEXEuler,
    LinearlyImplicitEuler as LinearlyImplicitEuler,
    Rosenbrock2 as Rosenbrock2,
)
from ._version import __version__ as _installed_version
from ._zonal.albedo.prescribed import PrescribedAlbedo as PrescribedAlbedo
from ._zonal.albedo.smooth import SmoothIceAlbedo as SmoothIceAlbedo
from ._zonal.albedo.subgrid import SubgridIceAlbedo as SubgridIceAlbedo
from ._zonal.base import (
    AbstractAlbedo as AbstractAlbedo,
    AbstractForcing as AbstractForcing,
    AbstractHeatCapacity as AbstractHeatCapacity,
    AbstractInsolation as AbstractInsolation,
    AbstractLongwave as AbstractLongwave,
    AbstractTerm as AbstractTerm,
    AbstractTransport as AbstractTransport,
)
from ._zonal.cycle import SeasonalCycle as SeasonalCycle
from ._zonal.forcing.co2 import CO2Forcing as CO2Forcing
from ._zonal.forcing.uniform import UniformForcing as UniformForcing
from ._zonal.grid import Grid as Grid
from ._zonal.heat_capacity.land_ocean import (
    LandOceanHeatCapacity as LandOceanHeatCapacity,
)
from ._zonal.heat_capacity.mixed_layer import (
    MixedLayerHeatCapacity as MixedLayerHeatCapacity,
)
from ._zonal.insolation.annual_mean import (
    AnnualMeanInsolation as AnnualMeanInsolation,
)
from ._zonal.insolation.daily import DailyInsolation as DailyInsolation
from ._zonal.insolation.orbital import (
    annual_mean_insolation as annual_mean_insolation,
    daily_insolation as daily_insolation,
    declination as declination,
    solar_longitude as solar_longitude,
)
from ._zonal.insolation.p2 import P2Insolation as P2Insolation
from ._zonal.longwave.grey_body import GreyBodyLongwave as GreyBodyLongwave
from ._zonal.longwave.linear import LinearLongwave as LinearLongwave
from ._zonal.model import (
    EnergyBalanceModel as EnergyBalanceModel,
    ice_edge as ice_edge,
    present_day_profile as present_day_profile,
)
from ._zonal.params import Params as Params
from ._zonal.run import Trajectory as Trajectory
from ._zonal.transport.diffusive import DiffusiveTransport as DiffusiveTransport
from ._zonal.transport.latitude_dependent import (
    LatitudeDiffusiveTransport as LatitudeDiffusiveTransport,
)
from ._zonal.transport.moist import (
    MoistDiffusiveTransport as MoistDiffusiveTransport,
)


# JAX's persistent compilation cache, where the environment asks for it
# (`EBM_COMPILATION_CACHE`); otherwise importing ebm leaves JAX's configuration be.
_cache.enable_from_environment()

__version__ = _installed_version
