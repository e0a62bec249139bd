"""The study plan (``biossd study plan``; Lee, Min and Yoon 2015, §5.1), along its flow: the
parameters as given are checked against the schema and as folders (:mod:`.schema`), read into
tools, caps, scales, settings, inputs, chains and the sizing record (:mod:`.parse`), their storage
classes read and checked against this host (:mod:`.storage_classes`), what the host must have checked last
(:mod:`.resources`), and the matrix of runs made of them (:mod:`.matrix`); :mod:`.estimate` says
how long it takes."""
