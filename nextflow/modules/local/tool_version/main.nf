// TOOL_VERSION: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process TOOL_VERSION {
    tag "${tool}"
    label 'process_single'
    cache false

    input:
    val tool

    output:
    tuple val(tool), env(version), env(image_ref), env(biossd_version), emit: version

    script:
    def q      = { value -> shellQuote(value) }
    def engine = task.ext.engine ?: ''
    """
    version=\$(biossd catalogue version ${engine ? "--container ${q(engine)}" : ''} ${q(tool)})
    image_ref=native
    if [ -n ${q(engine)} ]; then
        image_ref=\$(biossd catalogue image --engine ${q(engine)} ${q(tool)})
    fi
    biossd_version=\$(biossd --version | sed 's/biossd //')
    """

    stub:
    """
    version=stub image_ref=native biossd_version=stub
    """
}
