"""Models of storage devices, as data and as code: the hard disk's mechanics (:mod:`.diskmodel`,
one source of truth for the emulated HDD and the prediction), the cloud volume behind its instance
(:mod:`.cloudmodel`) and the prediction's targets built on them, flash drives among them
(:mod:`.devicemodels`). The devices they describe are :mod:`biossd.host.devices` (what a host
has) and :mod:`biossd.host.devicerecord` (what was measured of one)."""

#: How a device, a prediction target or an emulated class names a cloud volume:
#: ``cloud:<volume>[@<instance>]`` (docs/cloud.md; the model is :mod:`.cloudmodel`).
CLOUD_PREFIX = "cloud:"
