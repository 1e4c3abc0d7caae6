import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.message.JoinGroupRequestData.JoinGroupRequestProtocol;
import org.apache.kafka.common.message.JoinGroupRequestData.JoinGroupRequestProtocolCollection;
import org.apache.kafka.connect.runtime.distributed.ConnectProtocol;
import org.apache.kafka.connect.runtime.distributed.ConnectProtocolCompatibility;
import org.apache.kafka.connect.runtime.distributed.ExtendedAssignment;
import org.apache.kafka.connect.runtime.distributed.ExtendedWorkerState;
import org.apache.kafka.connect.runtime.distributed.IncrementalCooperativeConnectProtocol;
import org.apache.kafka.connect.util.ConnectorTaskId;

/**
 * Java Connect's own group-protocol code on cases given as JSON, for the byte-compatibility test of
 * connect_runtime/runtime/coordination/java_connect_protocol.py (tests/kafka/test_java_connect_protocol.py).
 *
 * Usage: java ConnectProtocolProbe <cases.json>
 * Input: {"encode": [case...], "decode": [{"kind": "metadata"|"assignment", "hex": "..."}...]}, a case being
 *   {"kind": "metadata", "protocol": "default"|"compatible"|"sessioned", "url", "config_offset", "assignment": a|null}
 *   {"kind": "assignment", "protocol", "error", "leader", "leader_url", "config_offset", "connectors": [..],
 *    "tasks": [[connector, task]..], "revoked_connectors", "revoked_tasks", "delay"}
 * Output, one JSON line: {"jdk": feature version,
 *   "encoded": per case, a metadata's JoinGroup protocols [[name, hex]...] (WorkerCoordinator.metadata()
 *              with connect.protocol = the case's protocol) or an assignment's hex,
 *   "decoded": per hex, what Java's worker reads (IncrementalCooperativeConnectProtocol.deserialize*), in the
 *              case's shape plus "version"; v0 assignments also as ConnectProtocol.deserializeAssignment reads
 *              them ("eager")}
 */
public final class ConnectProtocolProbe {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();

    private ConnectProtocolProbe() {
    }

    public static void main(String[] args) throws Exception {
        JsonNode input = JSON.readTree(new File(args[0]));
        ObjectNode output = JSON.createObjectNode();
        output.put("jdk", Runtime.version().feature());
        ArrayNode encoded = output.putArray("encoded");
        for (JsonNode c : input.get("encode")) {
            if ("metadata".equals(c.get("kind").asText())) {
                encoded.add(joinGroupProtocols(c));
            } else {
                encoded.add(hex(serializeAssignment(c)));
            }
        }
        ArrayNode decoded = output.putArray("decoded");
        for (JsonNode c : input.get("decode")) {
            byte[] bytes = HEX.parseHex(c.get("hex").asText());
            if ("metadata".equals(c.get("kind").asText())) {
                ExtendedWorkerState state = IncrementalCooperativeConnectProtocol.deserializeMetadata(ByteBuffer.wrap(bytes));
                ObjectNode node = JSON.createObjectNode();
                node.put("url", state.url());
                node.put("config_offset", state.offset());
                ExtendedAssignment assignment = state.assignment();
                node.set("assignment", assignment == ExtendedAssignment.empty() ? null : toJson(assignment));
                decoded.add(node);
            } else {
                ObjectNode node = toJson(IncrementalCooperativeConnectProtocol.deserializeAssignment(ByteBuffer.wrap(bytes)));
                if (node.get("version").asInt() == 0) {
                    ConnectProtocol.Assignment eager = ConnectProtocol.deserializeAssignment(ByteBuffer.wrap(bytes));
                    ObjectNode eagerNode = node.putObject("eager");
                    eagerNode.put("error", eager.error());
                    eagerNode.put("leader", eager.leader());
                    eagerNode.put("leader_url", eager.leaderUrl());
                    eagerNode.put("config_offset", eager.offset());
                    eagerNode.set("connectors", strings(eager.connectors()));
                    eagerNode.set("tasks", tasks(eager.tasks()));
                }
                decoded.add(node);
            }
        }
        System.out.println(JSON.writeValueAsString(output));
    }

    private static ArrayNode joinGroupProtocols(JsonNode c) {
        ConnectProtocolCompatibility mode = ConnectProtocolCompatibility.fromProtocol(c.get("protocol").asText());
        JsonNode previous = c.get("assignment");
        ExtendedAssignment assignment = previous == null || previous.isNull() ? null : assignment(previous, mode.protocolVersion());
        ExtendedWorkerState state = new ExtendedWorkerState(c.get("url").asText(), c.get("config_offset").asLong(), assignment);
        JoinGroupRequestProtocolCollection protocols = mode == ConnectProtocolCompatibility.EAGER
            ? ConnectProtocol.metadataRequest(state)
            : IncrementalCooperativeConnectProtocol.metadataRequest(state, mode == ConnectProtocolCompatibility.SESSIONED);
        ArrayNode out = JSON.createArrayNode();
        for (JoinGroupRequestProtocol protocol : protocols) {
            out.addArray().add(protocol.name()).add(HEX.formatHex(protocol.metadata()));
        }
        return out;
    }

    private static ByteBuffer serializeAssignment(JsonNode c) {
        ConnectProtocolCompatibility mode = ConnectProtocolCompatibility.fromProtocol(c.get("protocol").asText());
        ExtendedAssignment assignment = assignment(c, mode.protocolVersion());
        if (mode == ConnectProtocolCompatibility.EAGER) {
            return ConnectProtocol.serializeAssignment(assignment);
        }
        return IncrementalCooperativeConnectProtocol.serializeAssignment(assignment, mode == ConnectProtocolCompatibility.SESSIONED);
    }

    private static ExtendedAssignment assignment(JsonNode c, short version) {
        return new ExtendedAssignment(version, (short) c.get("error").asInt(), c.get("leader").asText(),
            c.get("leader_url").asText(), c.get("config_offset").asLong(),
            stringList(c.get("connectors")), taskList(c.get("tasks")),
            stringList(c.get("revoked_connectors")), taskList(c.get("revoked_tasks")), c.get("delay").asInt());
    }

    private static List<String> stringList(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(item -> out.add(item.asText()));
        return out;
    }

    private static List<ConnectorTaskId> taskList(JsonNode array) {
        List<ConnectorTaskId> out = new ArrayList<>();
        array.forEach(item -> out.add(new ConnectorTaskId(item.get(0).asText(), item.get(1).asInt())));
        return out;
    }

    private static ObjectNode toJson(ExtendedAssignment a) {
        ObjectNode node = JSON.createObjectNode();
        node.put("version", a.version());
        node.put("error", a.error());
        node.put("leader", a.leader());
        node.put("leader_url", a.leaderUrl());
        node.put("config_offset", a.offset());
        node.set("connectors", strings(a.connectors()));
        node.set("tasks", tasks(a.tasks()));
        node.set("revoked_connectors", strings(a.revokedConnectors()));
        node.set("revoked_tasks", tasks(a.revokedTasks()));
        node.put("delay", a.delay());
        return node;
    }

    private static ArrayNode strings(Collection<String> values) {
        ArrayNode out = JSON.createArrayNode();
        values.forEach(out::add);
        return out;
    }

    private static ArrayNode tasks(Collection<ConnectorTaskId> values) {
        ArrayNode out = JSON.createArrayNode();
        values.forEach(task -> out.addArray().add(task.connector()).add(task.task()));
        return out;
    }

    private static String hex(ByteBuffer buffer) {
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return HEX.formatHex(bytes);
    }
}
