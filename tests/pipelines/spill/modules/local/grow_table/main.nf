process GROW_TABLE {
    tag "${meta.id}"
    label 'process_single'
    // Asks for less than it needs at first; retried with twice as much.
    memory { 40.MB * task.attempt }
    errorStrategy 'retry'
    maxRetries 1

    input:
    val meta

    output:
    tuple val(meta), path("${meta.id}.txt"), emit: table

    script:
    """
    python3 -c "t = bytearray(${meta.mib} << 20); t[::4096] = b'x' * len(t[::4096]); open('${meta.id}.txt', 'w').write(str(len(t)))"
    """
}
