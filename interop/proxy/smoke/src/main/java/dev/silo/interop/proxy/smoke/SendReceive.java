package dev.silo.interop.proxy.smoke;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Sends one message with the 5.x gRPC SDK (plaintext) and, unless told not to, receives it back
 * with a SimpleConsumer and acknowledges it.
 *
 * <p>Usage: {@code SendReceive HOST:PORT TOPIC [GROUP|-]}; GROUP "-" skips the receive. Exit 0 when
 * the sent message (matched by message id) was received and acked, or sent when receive is skipped.
 */
public final class SendReceive {

    private SendReceive() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: SendReceive HOST:PORT TOPIC [GROUP|-]");
            System.exit(2);
        }
        String endpoint = args[0];
        String topic = args[1];
        String group = args.length > 2 ? args[2] : "smoke-group";
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration configuration = ClientConfiguration.newBuilder()
            .setEndpoints(endpoint)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();

        SimpleConsumer consumer = null;
        if (!"-".equals(group)) {
            // Subscribe first so that the group exists before the message is sent.
            consumer = provider.newSimpleConsumerBuilder()
                .setClientConfiguration(configuration)
                .setConsumerGroup(group)
                .setAwaitDuration(Duration.ofSeconds(5))
                .setSubscriptionExpressions(Collections.singletonMap(topic,
                    new FilterExpression("*", FilterExpressionType.TAG)))
                .build();
        }

        String body = "smoke " + System.nanoTime();
        String sentId;
        try (Producer producer = provider.newProducerBuilder()
            .setClientConfiguration(configuration)
            .setTopics(topic)
            .build()) {
            Message message = provider.newMessageBuilder()
                .setTopic(topic)
                .setTag("smoke")
                .setKeys("smoke-key")
                .setBody(body.getBytes(StandardCharsets.UTF_8))
                .build();
            SendReceipt receipt = producer.send(message);
            sentId = receipt.getMessageId().toString();
            System.out.println("sent messageId=" + sentId + " to " + topic + " via " + endpoint);
        }
        if (consumer == null) {
            return;
        }
        try {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (System.nanoTime() < deadline) {
                List<MessageView> views = consumer.receive(16, Duration.ofSeconds(30));
                for (MessageView view : views) {
                    consumer.ack(view);
                    String got = StandardCharsets.UTF_8.decode(view.getBody()).toString();
                    System.out.println("received messageId=" + view.getMessageId() + " body=" + got
                        + " (acked)");
                    if (view.getMessageId().toString().equals(sentId)) {
                        return;
                    }
                }
            }
            System.err.println("did not receive message " + sentId + " within 60 s");
            System.exit(1);
        } finally {
            consumer.close();
        }
    }
}
