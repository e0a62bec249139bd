"""The emulated hard disk: its service-time model (:mod:`.diskmodel`), the FUSE-backed block
server that applies it (:mod:`.server`) and bringing a disk up and down on the host
(:mod:`.emulate`)."""
