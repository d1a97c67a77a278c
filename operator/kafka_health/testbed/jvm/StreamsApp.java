/*
 * The testbed's Kafka Streams application (kafka_health/testbed/streams_app.py compiles and starts
 * it): a real member of a streams group (KIP-1071, group.protocol=streams), so that the product's
 * reading of streams groups is checked against what Kafka itself reports.
 *
 * Usage: StreamsApp <bootstrap servers> <application.id> <source topic> <sink topic> [extra...]
 * where each extra is KEY=VALUE (a Streams or client setting) or the path of a properties file
 * (the client settings of a secured testbed).
 *
 * The topology counts the records of <source topic> by their value and writes the counts to
 * <sink topic>: re-keying makes a repartition topic, the count a changelog topic, so the group
 * has two subtopologies and both kinds of internal topics. The store is in memory: no RocksDB
 * native library is needed, and the changelog topic exists all the same.
 *
 * It prints one line per state change ("STATE <old> -> <new>") and one per failed stream thread
 * ("MISSING <message>" when a source topic is missing, "FAILED <message>" otherwise), and runs
 * until SIGTERM, on which it closes (its member leaves the group).
 */

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.MissingSourceTopicException;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;

public final class StreamsApp {
    private StreamsApp() {
    }

    public static void main(final String[] args) throws IOException, InterruptedException {
        if (args.length < 4) {
            System.err.println("usage: StreamsApp <bootstrap> <application.id> <source> <sink> [KEY=VALUE|file]...");
            System.exit(2);
        }
        final Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "1000");
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        for (int i = 4; i < args.length; i++) {
            final int eq = args[i].indexOf('=');
            if (eq > 0) {
                props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
            } else {
                try (InputStream in = new FileInputStream(args[i])) {
                    props.load(in);
                }
            }
        }

        final StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[2], Consumed.with(Serdes.String(), Serdes.String()))
            .selectKey((key, value) -> value)
            .groupByKey(Grouped.with("by-value", Serdes.String(), Serdes.String()))
            .count(Materialized.as(Stores.inMemoryKeyValueStore("counts")))
            .toStream()
            .to(args[3], Produced.with(Serdes.String(), Serdes.Long()));

        final KafkaStreams streams = new KafkaStreams(builder.build(), props);
        final CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("STATE " + before + " -> " + now);
            System.out.flush();
        });
        // A missing source topic fails the stream thread after two heartbeat intervals; a new
        // thread takes its place, so the app waits for the topic as long as it runs (and its
        // group stays NOT_READY meanwhile) instead of ending in ERROR.
        streams.setUncaughtExceptionHandler(exception -> {
            final boolean missing = exception instanceof MissingSourceTopicException
                || exception.getCause() instanceof MissingSourceTopicException;
            System.out.println((missing ? "MISSING " : "FAILED ") + exception.getMessage());
            System.out.flush();
            return missing ? StreamThreadExceptionResponse.REPLACE_THREAD
                : StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close();
            closed.countDown();
        }, "streams-app-shutdown"));
        streams.start();
        closed.await();
    }
}
