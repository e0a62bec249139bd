// STUDY_INPUT: described in meta.yml beside this file (what it does, the meta keys it reads, its inputs and outputs)
include { shellQuote } from '../../../lib/shell'

process STUDY_INPUT {
    tag "${meta.id}"
    label 'process_single'

    input:
    tuple val(meta), val(size), val(seed)

    output:
    tuple val(meta), path('input'), emit: input
    path '{synth,prepared}.json'   , emit: record
    path 'versions.yml'            , emit: versions

    script:
    def q = { value -> shellQuote(value) }
    def synthetic = !meta.source || meta.source == 'synthetic'
    def make = synthetic
        ? "biossd data synth ${q(meta.kind)}"
        : "biossd data prepare ${q(meta.source)} --data ${q(meta.data)}" + (meta.manifests ? " --manifests ${q(meta.manifests)}" : '')
    def record = synthetic ? 'synth.json' : 'prepared.json'
    """
    ${make} --size ${q(size)} --scale ${q(meta.scale)} --seed ${q(seed)} -o input --hold-host-lock > /dev/null
    cp input/${record} ${record}
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
