/*
 * A synthetic input of one kind (biossd data synth): a baseline of `size` replicated `scale`
 * times, from a fixed seed, so the same parameters give the same bytes on every host. Written
 * under the host lock: never inside a measured window of another study on this host.
 */
include { shellQuote } from '../../../lib/shell'

process SYNTH_INPUT {
    tag "${meta.id}"
    label 'process_single'
    // synth.json, the input's record, is published (conf/modules.config): a copy beside input/,
    // as Nextflow publishes an output inside another output only as part of it.

    input:
    tuple val(meta), val(size), val(seed)

    output:
    tuple val(meta), path('input'), emit: input
    path 'synth.json'              , emit: record
    path 'versions.yml'            , emit: versions

    script:
    def q = { value -> shellQuote(value) }
    """
    biossd data synth ${q(meta.kind)} --size ${q(size)} --scale ${q(meta.scale)} --seed ${q(seed)} -o input --hold-host-lock > /dev/null
    cp input/synth.json synth.json
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    mkdir input && touch input/reads.bam && echo '{"stub": true}' > synth.json
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
