/*
 * JSON read once for every workflow: into plain maps and lists, built whole. JsonSlurper's lazy
 * maps build themselves on their first read, so two task scripts reading one shared map at once
 * (every task of a storage class shares its class's) raised ConcurrentModificationException.
 */
def parseJson(String text) {
    new groovy.json.JsonSlurperClassic().parseText(text)
}
