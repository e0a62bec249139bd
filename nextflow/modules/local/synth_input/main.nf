/*
 * A synthetic input of one kind (biossd data synth): a baseline of `size` replicated `scale`
 * times, from a fixed seed, so the same parameters give the same bytes on every host.
 */
process SYNTH_INPUT {
    tag "${meta.id}"
    label 'process_single'

    input:
    tuple val(meta), val(size), val(seed)

    output:
    tuple val(meta), path('input'), emit: input
    path 'versions.yml'            , emit: versions

    script:
    """
    biossd data synth ${meta.kind} --size ${size} --scale ${meta.scale} --seed ${seed} -o input > /dev/null
    cat <<-END_VERSIONS > versions.yml
    "${task.process}":
        biossd: \$(biossd --version | sed 's/biossd //')
    END_VERSIONS
    """

    stub:
    """
    mkdir input && touch input/reads.bam
    echo '"${task.process}": {biossd: stub}' > versions.yml
    """
}
