import java.io.FileInputStream;
import java.io.InputStream;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * What Java's MirrorClient (through RemoteClusterUtils, as applications call it) reads on one cluster,
 * printed as one JSON object, so the Java interop tests (tests/integration/test_java_interop.py) can
 * compare it with this project's mirror.client on the same cluster.
 *
 * Usage: java MirrorClientProbe <client.properties> <alias>[,<alias>...] [<remoteAlias>:<group> ...]
 * The properties are a MirrorClientConfig (bootstrap.servers, replication.policy.*, consumer.*...).
 * Output: {"heartbeatTopics": [...], "checkpointTopics": [...], "upstreamClusters": [...],
 *          "replicationHops": {alias: n}, "translateOffsets": {"remoteAlias:group": {"topic-partition": offset}}}
 */
public final class MirrorClientProbe {
    private MirrorClientProbe() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: MirrorClientProbe <client.properties> <alias>[,<alias>...] [<remoteAlias>:<group> ...]");
            System.exit(2);
        }
        Properties file = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            file.load(in);
        }
        Map<String, Object> props = new HashMap<>();
        file.stringPropertyNames().forEach(k -> props.put(k, file.getProperty(k)));

        StringBuilder out = new StringBuilder("{");
        out.append("\"heartbeatTopics\":").append(strings(RemoteClusterUtils.heartbeatTopics(props)));
        out.append(",\"checkpointTopics\":").append(strings(RemoteClusterUtils.checkpointTopics(props)));
        out.append(",\"upstreamClusters\":").append(strings(RemoteClusterUtils.upstreamClusters(props)));
        out.append(",\"replicationHops\":{");
        String sep = "";
        for (String alias : args[1].split(",")) {
            out.append(sep).append(quote(alias)).append(':').append(RemoteClusterUtils.replicationHops(props, alias));
            sep = ",";
        }
        out.append("},\"translateOffsets\":{");
        sep = "";
        for (int i = 2; i < args.length; i++) {
            String[] remoteAndGroup = args[i].split(":", 2);
            Map<TopicPartition, OffsetAndMetadata> translated = RemoteClusterUtils.translateOffsets(
                props, remoteAndGroup[0], remoteAndGroup[1], Duration.ofSeconds(20));
            Map<String, Long> sorted = new TreeMap<>();
            translated.forEach((tp, offset) -> sorted.put(tp.topic() + "-" + tp.partition(), offset.offset()));
            out.append(sep).append(quote(args[i])).append(":{");
            String inner = "";
            for (Map.Entry<String, Long> e : sorted.entrySet()) {
                out.append(inner).append(quote(e.getKey())).append(':').append(e.getValue());
                inner = ",";
            }
            out.append('}');
            sep = ",";
        }
        out.append("}}");
        System.out.println(out);
    }

    private static String strings(Set<String> values) {
        StringBuilder out = new StringBuilder("[");
        String sep = "";
        for (String value : new TreeSet<>(values)) {
            out.append(sep).append(quote(value));
            sep = ",";
        }
        return out.append(']').toString();
    }

    private static String quote(String value) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
