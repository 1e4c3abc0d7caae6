/*
 * The native copier: the limit of a client-based copier on this machine (bench/native_copier.py).
 *
 * Why: bench/pipe.py is a Python loop over confluent-kafka, and the product's copy loop is partly in C,
 * so the pipe no longer bounds what a copier on these clients can do. This program is the same copy with
 * no interpreter at all: librdkafka's batched consume on the source (rd_kafka_consume_batch_queue, as
 * confluent-kafka's Consumer.consume calls it) and rd_kafka_producev of every message to the same
 * partition of the target (value, key, timestamp and headers kept, the payload copied as the product's
 * copy does), rd_kafka_poll per batch, a final rd_kafka_flush. Nothing else: no offsets, no tracking.
 *
 * The client settings are not here: bench/native_copier.py writes the task producer's and the source
 * consumer's configs (task_producer_config, copier_consumer_config) as key=value files, so they have one
 * source of truth. Only failures produce delivery reports (delivery.report.only.error, as the pipe).
 *
 * It links against the librdkafka that confluent-kafka's wheel ships, so both copiers run the same
 * client. The wheel ships no header, so the few declarations used are below, as rdkafka.h declares them:
 * librdkafka's stable C ABI (the same in every 2.x release; rd_kafka_message_t's layout is public and
 * documented as such). Declaring them here needs no header that matches the shipped library's version.
 *
 * Usage: native_copier PRODUCER_CONF CONSUMER_CONF TOPIC TARGET_TOPIC PARTITIONS RECORDS [BATCH]
 *        native_copier --dump producer|consumer CONF     (the effective config, every key, key=value)
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

/* ---- librdkafka's ABI, as declared in rdkafka.h (v2.x) ----------------------------------------- */
typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_topic_conf_s rd_kafka_topic_conf_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
typedef struct rd_kafka_topic_partition_list_s rd_kafka_topic_partition_list_t;
typedef struct rd_kafka_topic_partition_s rd_kafka_topic_partition_t;
typedef int rd_kafka_resp_err_t;
typedef int rd_kafka_type_t;
typedef int rd_kafka_conf_res_t;
typedef int rd_kafka_timestamp_type_t;

typedef struct rd_kafka_message_s {
        rd_kafka_resp_err_t err;
        rd_kafka_topic_t *rkt;
        int32_t partition;
        void *payload;
        size_t len;
        void *key;
        size_t key_len;
        int64_t offset;
        void *_private;
} rd_kafka_message_t;

#define RD_KAFKA_PRODUCER 0
#define RD_KAFKA_CONSUMER 1
#define RD_KAFKA_CONF_OK 0
#define RD_KAFKA_RESP_ERR_NO_ERROR 0
#define RD_KAFKA_RESP_ERR__PARTITION_EOF (-191)
#define RD_KAFKA_RESP_ERR__QUEUE_FULL (-184)
#define RD_KAFKA_MSG_F_COPY 0x2
#define RD_KAFKA_TIMESTAMP_NOT_AVAILABLE 0

enum { /* rd_kafka_vtype_t */
        RD_KAFKA_VTYPE_END = 0,
        RD_KAFKA_VTYPE_RKT = 2,
        RD_KAFKA_VTYPE_PARTITION = 3,
        RD_KAFKA_VTYPE_VALUE = 4,
        RD_KAFKA_VTYPE_KEY = 5,
        RD_KAFKA_VTYPE_MSGFLAGS = 7,
        RD_KAFKA_VTYPE_TIMESTAMP = 8,
        RD_KAFKA_VTYPE_HEADERS = 10,
};

const char *rd_kafka_version_str(void);
const char *rd_kafka_err2str(rd_kafka_resp_err_t err);
rd_kafka_conf_t *rd_kafka_conf_new(void);
void rd_kafka_conf_destroy(rd_kafka_conf_t *conf);
rd_kafka_conf_res_t rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *errstr,
                                      size_t errstr_size);
void rd_kafka_conf_set_dr_msg_cb(rd_kafka_conf_t *conf,
                                 void (*dr_msg_cb)(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage,
                                                   void *opaque));
const char **rd_kafka_conf_dump(rd_kafka_conf_t *conf, size_t *cntp);
void rd_kafka_conf_dump_free(const char **arr, size_t cnt);
const rd_kafka_conf_t *rd_kafka_conf(rd_kafka_t *rk);
rd_kafka_topic_conf_t *rd_kafka_conf_get_default_topic_conf(rd_kafka_conf_t *conf);
rd_kafka_topic_conf_t *rd_kafka_topic_conf_new(void);
void rd_kafka_topic_conf_destroy(rd_kafka_topic_conf_t *topic_conf);
const char **rd_kafka_topic_conf_dump(rd_kafka_topic_conf_t *conf, size_t *cntp);
rd_kafka_t *rd_kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf, char *errstr, size_t errstr_size);
void rd_kafka_destroy(rd_kafka_t *rk);
int rd_kafka_poll(rd_kafka_t *rk, int timeout_ms);
rd_kafka_resp_err_t rd_kafka_flush(rd_kafka_t *rk, int timeout_ms);
int rd_kafka_outq_len(rd_kafka_t *rk);
rd_kafka_topic_t *rd_kafka_topic_new(rd_kafka_t *rk, const char *topic, rd_kafka_topic_conf_t *conf);
void rd_kafka_topic_destroy(rd_kafka_topic_t *rkt);
rd_kafka_resp_err_t rd_kafka_producev(rd_kafka_t *rk, ...);
rd_kafka_resp_err_t rd_kafka_poll_set_consumer(rd_kafka_t *rk);
rd_kafka_queue_t *rd_kafka_queue_get_consumer(rd_kafka_t *rk);
void rd_kafka_queue_destroy(rd_kafka_queue_t *rkqu);
ssize_t rd_kafka_consume_batch_queue(rd_kafka_queue_t *rkqu, int timeout_ms, rd_kafka_message_t **rkmessages,
                                     size_t rkmessages_size);
void rd_kafka_message_destroy(rd_kafka_message_t *rkmessage);
int64_t rd_kafka_message_timestamp(const rd_kafka_message_t *rkmessage, rd_kafka_timestamp_type_t *tstype);
rd_kafka_resp_err_t rd_kafka_message_headers(const rd_kafka_message_t *rkmessage, rd_kafka_headers_t **hdrsp);
rd_kafka_headers_t *rd_kafka_headers_copy(const rd_kafka_headers_t *src);
void rd_kafka_headers_destroy(rd_kafka_headers_t *hdrs);
rd_kafka_topic_partition_list_t *rd_kafka_topic_partition_list_new(int size);
void rd_kafka_topic_partition_list_destroy(rd_kafka_topic_partition_list_t *rkparlist);
rd_kafka_topic_partition_t *rd_kafka_topic_partition_list_add(rd_kafka_topic_partition_list_t *rktparlist,
                                                              const char *topic, int32_t partition);
rd_kafka_resp_err_t rd_kafka_topic_partition_list_set_offset(rd_kafka_topic_partition_list_t *rktparlist,
                                                             const char *topic, int32_t partition, int64_t offset);
rd_kafka_resp_err_t rd_kafka_assign(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *partitions);
rd_kafka_resp_err_t rd_kafka_consumer_close(rd_kafka_t *rk);

/* ---- the copy ----------------------------------------------------------------------------------- */
static long delivery_failures;
static char first_failure[512];

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque) {
        (void)rk;
        (void)opaque;
        if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) /* with delivery.report.only.error: never */
                return;
        if (delivery_failures++ == 0)
                snprintf(first_failure, sizeof first_failure, "%s", rd_kafka_err2str(msg->err));
}

static void die(const char *what, const char *why) {
        fprintf(stderr, "native copier: %s: %s\n", what, why);
        exit(2);
}

/* A config from a key=value file (one per line, as bench/native_copier.py writes it). */
static rd_kafka_conf_t *read_conf(const char *path) {
        FILE *file = fopen(path, "r");
        char line[8192], errstr[512];
        rd_kafka_conf_t *conf;
        if (!file)
                die(path, "cannot open");
        conf = rd_kafka_conf_new();
        while (fgets(line, sizeof line, file)) {
                char *eq = strchr(line, '='), *end = line + strlen(line);
                while (end > line && (end[-1] == '\n' || end[-1] == '\r'))
                        *--end = '\0';
                if (!line[0] || line[0] == '#')
                        continue;
                if (!eq)
                        die(path, "a line without '='");
                *eq = '\0';
                if (rd_kafka_conf_set(conf, line, eq + 1, errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
                        die(line, errstr);
        }
        fclose(file);
        return conf;
}

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void) {
        struct rusage usage;
        getrusage(RUSAGE_SELF, &usage);
        return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
               usage.ru_stime.tv_usec / 1e6;
}

/* Produce one consumed message to the same partition of the target; waits while the queue is full. */
static rd_kafka_resp_err_t produce(rd_kafka_t *producer, rd_kafka_topic_t *rkt, const rd_kafka_message_t *msg) {
        rd_kafka_timestamp_type_t tstype;
        int64_t timestamp = rd_kafka_message_timestamp(msg, &tstype);
        rd_kafka_headers_t *source_headers = NULL;
        for (;;) {
                rd_kafka_headers_t *headers = NULL; /* librdkafka owns them once produced */
                rd_kafka_resp_err_t err;
                if (rd_kafka_message_headers(msg, &source_headers) == RD_KAFKA_RESP_ERR_NO_ERROR)
                        headers = rd_kafka_headers_copy(source_headers);
                err = rd_kafka_producev(producer, RD_KAFKA_VTYPE_RKT, rkt, RD_KAFKA_VTYPE_PARTITION,
                                        (int32_t)msg->partition, RD_KAFKA_VTYPE_VALUE, msg->payload, msg->len,
                                        RD_KAFKA_VTYPE_KEY, msg->key, msg->key_len, RD_KAFKA_VTYPE_MSGFLAGS,
                                        RD_KAFKA_MSG_F_COPY, RD_KAFKA_VTYPE_TIMESTAMP,
                                        (int64_t)(tstype == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? 0 : timestamp),
                                        RD_KAFKA_VTYPE_HEADERS, headers, RD_KAFKA_VTYPE_END);
                if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
                        return err;
                if (headers)
                        rd_kafka_headers_destroy(headers);
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        return err;
                rd_kafka_poll(producer, 10);
        }
}

static int copy(const char *producer_conf, const char *consumer_conf, const char *topic, const char *target_topic,
                int partitions, long records, size_t batch) {
        char errstr[512];
        rd_kafka_conf_t *pconf = read_conf(producer_conf), *cconf = read_conf(consumer_conf);
        rd_kafka_t *producer, *consumer;
        rd_kafka_topic_t *rkt;
        rd_kafka_queue_t *queue;
        rd_kafka_topic_partition_list_t *assignment;
        rd_kafka_message_t **msgs = calloc(batch, sizeof *msgs);
        long copied = 0, left;
        rd_kafka_resp_err_t err;
        int p;

        rd_kafka_conf_set_dr_msg_cb(pconf, on_delivery);
        if (!(producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, errstr, sizeof errstr)))
                die("producer", errstr);
        if (!(consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, errstr, sizeof errstr)))
                die("consumer", errstr);
        rd_kafka_poll_set_consumer(consumer);
        rkt = rd_kafka_topic_new(producer, target_topic, NULL);
        assignment = rd_kafka_topic_partition_list_new(partitions);
        for (p = 0; p < partitions; p++) {
                rd_kafka_topic_partition_list_add(assignment, topic, p);
                rd_kafka_topic_partition_list_set_offset(assignment, topic, p, 0);
        }
        if ((err = rd_kafka_assign(consumer, assignment)) != RD_KAFKA_RESP_ERR_NO_ERROR)
                die("assign", rd_kafka_err2str(err));
        rd_kafka_topic_partition_list_destroy(assignment);
        queue = rd_kafka_queue_get_consumer(consumer);

        while (copied < records) {
                ssize_t n = rd_kafka_consume_batch_queue(queue, 1000, msgs, batch), i;
                if (n < 0)
                        die("consume", "rd_kafka_consume_batch_queue failed");
                for (i = 0; i < n; i++) {
                        if (msgs[i]->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                                if ((err = produce(producer, rkt, msgs[i])) != RD_KAFKA_RESP_ERR_NO_ERROR)
                                        die("produce", rd_kafka_err2str(err));
                                copied++;
                        } else if (msgs[i]->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                                fprintf(stderr, "native copier: consume: %s\n", rd_kafka_err2str(msgs[i]->err));
                        }
                        rd_kafka_message_destroy(msgs[i]);
                }
                rd_kafka_poll(producer, 0);
        }
        rd_kafka_flush(producer, 300000);
        left = rd_kafka_outq_len(producer);
        rd_kafka_queue_destroy(queue);
        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(producer);
        free(msgs);
        if (left || delivery_failures) {
                fprintf(stderr, "native copier: %ld of %ld not acknowledged, %ld failed (first: %s)\n", left, copied,
                        delivery_failures, first_failure);
                return 1;
        }
        return 0;
}

static void print_pairs(const char **pairs, size_t count) {
        size_t i;
        for (i = 0; i + 1 < count; i += 2)
                printf("%s=%s\n", pairs[i], pairs[i + 1]);
        rd_kafka_conf_dump_free(pairs, count);
}

/* --dump: every key of the config a client made from CONF runs with: librdkafka's defaults under the
 * file's settings, after the client adjusted those that depend on each other (with idempotence,
 * max.in.flight.requests.per.connection becomes 5), the client-wide keys then the topic-level ones
 * (acks, message.timeout.ms, ...). */
static int dump(const char *kind, const char *path) {
        char errstr[512];
        rd_kafka_t *rk;
        rd_kafka_conf_t *conf;
        rd_kafka_topic_conf_t *topic_conf, *fresh = NULL;
        const char **pairs;
        size_t count;
        if (!(rk = rd_kafka_new(strcmp(kind, "producer") == 0 ? RD_KAFKA_PRODUCER : RD_KAFKA_CONSUMER,
                                read_conf(path), errstr, sizeof errstr)))
                die(kind, errstr);
        conf = (rd_kafka_conf_t *)rd_kafka_conf(rk); /* the dump only reads it */
        pairs = rd_kafka_conf_dump(conf, &count);
        print_pairs(pairs, count);
        if (!(topic_conf = rd_kafka_conf_get_default_topic_conf(conf))) /* no topic-level key set */
                topic_conf = fresh = rd_kafka_topic_conf_new();
        printf("# topic-level\n");
        pairs = rd_kafka_topic_conf_dump(topic_conf, &count);
        print_pairs(pairs, count);
        if (fresh)
                rd_kafka_topic_conf_destroy(fresh);
        rd_kafka_destroy(rk);
        return 0;
}

int main(int argc, char **argv) {
        double began = now_s();
        long records;
        int code;
        if (argc == 4 && strcmp(argv[1], "--dump") == 0)
                return dump(argv[2], argv[3]);
        if (argc < 7 || argc > 8) {
                fprintf(stderr, "usage: %s PRODUCER_CONF CONSUMER_CONF TOPIC TARGET_TOPIC PARTITIONS RECORDS [BATCH]\n"
                                "       %s --dump producer|consumer CONF\n",
                        argv[0], argv[0]);
                return 2;
        }
        records = atol(argv[6]);
        code = copy(argv[1], argv[2], argv[3], argv[4], atoi(argv[5]), records,
                    argc == 8 ? (size_t)atol(argv[7]) : 10000);
        printf("native: %ld records in %.2fs, librdkafka %s, cpu_s=%.2f\n", records, now_s() - began,
               rd_kafka_version_str(), cpu_s());
        return code;
}
