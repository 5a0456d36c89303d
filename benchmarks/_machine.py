"""What a benchmark ran on, recorded beside its figures."""

import os
import platform

import jax

import ebm


def machine() -> dict:
    return dict(
        device=str(jax.devices()[0]),
        platform=platform.platform(),
        cpu_count=os.cpu_count(),
        jax=jax.__version__,
        ebm=ebm.__version__,
    )
