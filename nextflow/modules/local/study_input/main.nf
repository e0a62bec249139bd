/*
 * One study input: a synthetic one (biossd data synth), or one prepared from a published data
 * set that `biossd data fetch` verified (biossd data prepare, by its manifest's recipe; the
 * plan's `source` names the data set and `data` its folder). A baseline of `size` replicated
 * `scale` times, from a fixed seed, so the same parameters give the same bytes on every host.
 * Written under the host lock: never inside a measured window of another study on this host.
 */
include { shellQuote } from '../../../lib/shell'

process STUDY_INPUT {
    tag "${meta.id}"
    label 'process_single'
    // The input's record (synth.json or prepared.json) is published (conf/modules.config): a copy
    // beside input/, as Nextflow publishes an output inside another output only as part of it.

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
