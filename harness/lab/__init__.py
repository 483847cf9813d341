"""The lab: everything a scenario runs against, brought up and torn down as one
(``assembly``), the administrator's actions on its cluster (``admin``), and an external
reconciler run as its operator (``external``)."""

from proxyfleet.harness.lab.assembly import (
    DEFAULT_NO_PROXY,
    PROXY2_HOST,
    PROXY2_PORT,
    PROXY_HOST,
    PROXY_PORT,
    Lab,
    LabError,
    LabNotStarted,
    LabSettings,
    customer_settings,
)

__all__ = ["DEFAULT_NO_PROXY", "PROXY2_HOST", "PROXY2_PORT", "PROXY_HOST", "PROXY_PORT", "Lab", "LabError",
           "LabNotStarted", "LabSettings", "customer_settings"]
