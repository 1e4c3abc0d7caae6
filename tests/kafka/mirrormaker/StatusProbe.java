import java.util.HashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.utils.Time;
import org.apache.kafka.connect.json.JsonConverter;
import org.apache.kafka.connect.runtime.ConnectorStatus;
import org.apache.kafka.connect.runtime.TaskStatus;
import org.apache.kafka.connect.runtime.distributed.DistributedConfig;
import org.apache.kafka.connect.storage.KafkaStatusBackingStore;
import org.apache.kafka.connect.util.TopicAdmin;

/**
 * Java's view of a Connect group's statuses: what Java's own KafkaStatusBackingStore (the class a Java herder
 * reads its REST status from) reads from a status topic, for tests/kafka/test_java_mixed_group.py (a dedicated
 * Java MirrorMaker serves no public REST, so this is how Java's view is seen).
 *
 * Usage: java StatusProbe <bootstrap servers> <status topic> <connector>...
 * Output, one JSON line: {connector: {"state", "worker_id", "tasks": [{"id", "state", "worker_id"}...]}}
 */
public final class StatusProbe {
    private StatusProbe() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> props = new HashMap<>();
        props.put("bootstrap.servers", args[0]);
        props.put("group.id", "status-probe");
        props.put("config.storage.topic", "status-probe-unused-configs");
        props.put("offset.storage.topic", "status-probe-unused-offsets");
        props.put("status.storage.topic", args[1]);
        props.put("key.converter", JsonConverter.class.getName());
        props.put("value.converter", JsonConverter.class.getName());
        DistributedConfig config = new DistributedConfig(props);
        JsonConverter converter = new JsonConverter();
        converter.configure(Map.of("schemas.enable", "false"), false);
        Map<String, Object> admin = new HashMap<>();
        admin.put("bootstrap.servers", args[0]);
        KafkaStatusBackingStore store = new KafkaStatusBackingStore(Time.SYSTEM, converter, () -> new TopicAdmin(admin),
                "status-probe");
        store.configure(config);
        store.start();  // reads the topic to its end
        ObjectMapper json = new ObjectMapper();
        ObjectNode out = json.createObjectNode();
        try {
            for (int i = 2; i < args.length; i++) {
                ObjectNode connector = out.putObject(args[i]);
                ConnectorStatus status = store.get(args[i]);
                connector.put("state", status == null ? null : status.state().toString());
                connector.put("worker_id", status == null ? null : status.workerId());
                ArrayNode tasks = connector.putArray("tasks");
                for (TaskStatus task : store.getAll(args[i])) {
                    ObjectNode t = tasks.addObject();
                    t.put("id", task.id().task());
                    t.put("state", task.state().toString());
                    t.put("worker_id", task.workerId());
                }
            }
        } finally {
            store.stop();
        }
        System.out.println(json.writeValueAsString(out));
    }
}
