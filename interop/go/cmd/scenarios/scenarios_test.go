package main

import (
	"context"
	"hash/crc32"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

const testTopic, testRun = "GoInteropPC_test", "run1"

// fixture: six sent messages over two queues, offsets in send order.
func fixture() []*sentMsg {
	var ss []*sentMsg
	for i := 0; i < 6; i++ {
		_, s := buildMessage(testTopic, testRun, i, "body "+strconv.Itoa(i), []string{"TagA", "TagB"}[i%2])
		s.msgID = "ID" + strconv.Itoa(i)
		s.offsetMsgID = "OFF" + strconv.Itoa(i)
		s.queueID = i % 2
		s.queueOffset = int64(i / 2)
		ss = append(ss, s)
	}
	return ss
}

// delivery builds the message the consumer would get for s.
func delivery(s *sentMsg) *primitive.MessageExt {
	m := &primitive.MessageExt{
		Message: primitive.Message{
			Topic: testTopic,
			Body:  []byte(s.body),
			Queue: &primitive.MessageQueue{Topic: testTopic, BrokerName: "broker-a", QueueId: s.queueID},
		},
		MsgId:          s.msgID,
		OffsetMsgId:    s.offsetMsgID,
		QueueOffset:    s.queueOffset,
		BodyCRC:        int32(crc32.ChecksumIEEE([]byte(s.body)) & 0x7fffffff),
		BornTimestamp:  1,
		StoreTimestamp: 2,
	}
	m.WithProperty(primitive.PropertyKeys, s.keys)
	if s.tag != "" {
		m.WithProperty(primitive.PropertyTags, s.tag)
	}
	m.WithProperty(propSeq, strconv.Itoa(s.seq))
	m.WithProperty(propRun, testRun)
	return m
}

func deliverAll(c *collector, ms ...*primitive.MessageExt) {
	for _, m := range ms {
		_, _ = c.consume(context.Background(), m)
	}
}

func wantProblem(t *testing.T, problems []string, substr string) {
	t.Helper()
	for _, p := range problems {
		if strings.Contains(p, substr) {
			return
		}
	}
	t.Fatalf("no problem mentions %q; got %q", substr, problems)
}

func TestCheckAllGood(t *testing.T) {
	ss := fixture()
	c := newCollector(config{}, ss)
	for _, s := range ss {
		deliverAll(c, delivery(s))
	}
	select {
	case <-c.allIn:
	default:
		t.Fatal("allIn not closed after every message arrived")
	}
	if p := c.check(testTopic, testRun, true); len(p) != 0 {
		t.Fatalf("unexpected problems: %q", p)
	}
}

func TestCheckMissingDuplicateStray(t *testing.T) {
	ss := fixture()
	c := newCollector(config{}, ss)
	for _, s := range ss[1:] {
		deliverAll(c, delivery(s))
	}
	deliverAll(c, delivery(ss[3]))
	stray := delivery(ss[2])
	stray.Body = []byte("someone else's")
	deliverAll(c, stray)
	p := c.check(testTopic, testRun, false)
	wantProblem(t, p, "missing #0")
	wantProblem(t, p, "#3 \"body 3\" delivered 2 times")
	wantProblem(t, p, "unexpected delivery \"someone else's\"")
}

func TestCheckFields(t *testing.T) {
	ss := fixture()
	c := newCollector(config{}, ss)
	for i, s := range ss {
		m := delivery(s)
		switch i {
		case 1:
			m.WithProperty(primitive.PropertyTags, "TagC")
		case 2:
			m.WithProperty(primitive.PropertyKeys, "other")
		case 3:
			m.RemoveProperty(propSeq)
		case 4:
			m.OffsetMsgId = "elsewhere"
			m.BodyCRC++
		case 5:
			m.MsgId = "other-id"
			m.ReconsumeTimes = 1
		}
		deliverAll(c, m)
	}
	p := c.check(testTopic, testRun, true)
	wantProblem(t, p, "#1 tag")
	wantProblem(t, p, "#2 keys")
	wantProblem(t, p, "#3 property interopSeq")
	wantProblem(t, p, "#4 OffsetMsgId")
	wantProblem(t, p, "#4 BodyCRC")
	wantProblem(t, p, "#5 MsgId")
	wantProblem(t, p, "#5 ReconsumeTimes")
}

func TestCheckQueueOrder(t *testing.T) {
	ss := fixture()
	// The broker (so the SendResults) put #0 and #2 of queue 0 the other way round.
	ss[0].queueOffset, ss[2].queueOffset = ss[2].queueOffset, ss[0].queueOffset
	c := newCollector(config{}, ss)
	for _, s := range ss {
		deliverAll(c, delivery(s))
	}
	wantProblem(t, c.check(testTopic, testRun, true), "queue 0: #0 at offset 1 was sent before #2 at offset 0")

	// A gap in a queue of a topic whose every message was expected.
	ss = fixture()
	ss[4].queueOffset = 7
	c = newCollector(config{}, ss)
	for _, s := range ss {
		deliverAll(c, delivery(s))
	}
	wantProblem(t, c.check(testTopic, testRun, true), "queue 0: offset 7 at position 2")
}

func TestCheckOrderInsideCallback(t *testing.T) {
	ss := fixture()
	c := newCollector(config{}, ss)
	_, _ = c.consume(context.Background(), delivery(ss[2]), delivery(ss[0]), delivery(ss[4]))
	deliverAll(c, delivery(ss[1]), delivery(ss[3]), delivery(ss[5]))
	wantProblem(t, c.check(testTopic, testRun, true), "callback 1: queue 0 offset 0 delivered after offset 1")
}
