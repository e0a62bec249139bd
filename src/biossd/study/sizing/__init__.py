"""The sizing of a study (Lee, Min and Yoon 2015, §5.1: the machine shrunk on purpose, an input
of appropriate size for each program), one room: the rule, written once (:mod:`.rule`: F, M, D,
the inputs' budget), one profiled run of it on this host (:mod:`.run`), the procedure that
measures the rule into a study's parameters (:mod:`.procedure`, ``biossd study size``), and the
record it writes, read and checks (:mod:`.record`)."""
