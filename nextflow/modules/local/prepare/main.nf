// PREPARE: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process PREPARE {
    tag "${tool} ${input_id}"
    label 'process_single'

    input:
    tuple val(tool), val(input_id), path(input_dir, stageAs: 'input')

    output:
    tuple val(tool), val(input_id), path('prepared'), env(input_bytes), emit: prepared

    script:
    def q = { value -> shellQuote(value) }
    """
    input_bytes=\$(biossd catalogue prepare ${q(tool)} --input input --out prepared --hold-host-lock)
    """

    stub:
    """
    mkdir prepared && input_bytes=0
    """
}
