package stream

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// The request journal makes accepted requests survive a crash of the server. It lives in the spool database,
// so a request's finished samples and its journal entry change in the same transactions as its records:
//
//	bucket "r" / <consumer> / <request id>:
//	    "req"        -> the request as accepted (journalEntry, JSON); written before `accepted` is sent
//	    "cancelled"  -> present once the consumer cancelled it
//	    bucket "f":  item id, 0x00, sample index (decimal) -> nothing: the samples already spooled
//
// A trajectory put records its sample in "f" in the transaction that spools it; the put of the request's
// request_done deletes the whole entry. What is left at start-up is every request that had not ended: New
// runs each one again, skipping the samples in "f" (spooled, or spooled and acked since).

var (
	keyJournalReq       = []byte("req")
	keyJournalCancelled = []byte("cancelled")
	bucketJournalDone   = []byte("f")
)

// journalRef ties a spooled record to its journaled request.
type journalRef struct {
	request string // empty: not journaled (tests, or records of no request)
	item    string
	sample  int
	end     bool // the record is the request's request_done: the journal entry goes
}

// journalEntry is what the journal keeps of an accepted request: enough to run it again.
type journalEntry struct {
	Agent    string          `json:"agent,omitempty"`
	Items    []Item          `json:"items"`
	Sampling json.RawMessage `json:"sampling,omitempty"`
	Events   bool            `json:"events,omitempty"`
}

// journaled is a request found in the journal at start-up.
type journaled struct {
	consumer, id string
	entry        journalEntry
	cancelled    bool
	finished     map[SampleRef]bool
}

func journalBucket(tx *bolt.Tx, consumer, request string) *bolt.Bucket {
	c := tx.Bucket(bucketReqs).Bucket([]byte(consumer))
	if c == nil {
		return nil
	}
	return c.Bucket([]byte(request))
}

// journalPut creates the entry of a request; dup is true when one exists already (it is kept as it was).
func journalPut(tx *bolt.Tx, consumer, request string, val []byte) (dup bool, err error) {
	c, err := tx.Bucket(bucketReqs).CreateBucketIfNotExists([]byte(consumer))
	if err != nil {
		return false, err
	}
	if c.Bucket([]byte(request)) != nil {
		return true, nil
	}
	b, err := c.CreateBucket([]byte(request))
	if err != nil {
		return false, err
	}
	if _, err := b.CreateBucket(bucketJournalDone); err != nil {
		return false, err
	}
	return false, b.Put(keyJournalReq, val)
}

func journalCancel(tx *bolt.Tx, consumer, request string) error {
	if b := journalBucket(tx, consumer, request); b != nil {
		return b.Put(keyJournalCancelled, nil)
	}
	return nil
}

// journalRecord applies a put's journalRef: a finished sample is recorded, a request_done ends the entry.
func journalRecord(tx *bolt.Tx, consumer string, jr journalRef) error {
	if jr.request == "" {
		return nil
	}
	if jr.end {
		c := tx.Bucket(bucketReqs).Bucket([]byte(consumer))
		if c == nil || c.Bucket([]byte(jr.request)) == nil {
			return nil
		}
		if err := c.DeleteBucket([]byte(jr.request)); err != nil {
			return err
		}
		if k, _ := c.Cursor().First(); k == nil {
			return tx.Bucket(bucketReqs).DeleteBucket([]byte(consumer))
		}
		return nil
	}
	b := journalBucket(tx, consumer, jr.request)
	if b == nil {
		return nil
	}
	return b.Bucket(bucketJournalDone).Put([]byte(jr.item+"\x00"+strconv.Itoa(jr.sample)), nil)
}

// journal records an accepted request (committed, and fsynced when the spool is, when it returns). dup is true
// when the consumer already has a journaled request with this id.
func (s *spool) journal(consumer, request string, e journalEntry) (dup bool, err error) {
	val, err := json.Marshal(e)
	if err != nil {
		return false, fmt.Errorf("stream: journal request %s: %w", request, err)
	}
	op := &spoolOp{kind: opJournal, consumer: consumer, id: request, val: val, done: make(chan struct{})}
	if err := s.submit(op); err != nil {
		return false, err
	}
	return op.dup, op.err
}

// journalCancel records that the consumer cancelled a request, so a restart does not run it again.
func (s *spool) journalCancel(consumer, request string) error {
	op := &spoolOp{kind: opJournalCancel, consumer: consumer, id: request, done: make(chan struct{})}
	if err := s.submit(op); err != nil {
		return err
	}
	return op.err
}

// journaled returns every request in the journal (the ones that had not ended when the last process stopped).
func (s *spool) journaled() ([]journaled, error) {
	var out []journaled
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketReqs).ForEachBucket(func(consumer []byte) error {
			c := tx.Bucket(bucketReqs).Bucket(consumer)
			return c.ForEachBucket(func(id []byte) error {
				b := c.Bucket(id)
				j := journaled{consumer: string(consumer), id: string(id), finished: map[SampleRef]bool{}}
				if err := json.Unmarshal(b.Get(keyJournalReq), &j.entry); err != nil {
					return fmt.Errorf("request %q of consumer %q: %w", id, consumer, err)
				}
				j.cancelled = b.Get(keyJournalCancelled) != nil
				if f := b.Bucket(bucketJournalDone); f != nil {
					if err := f.ForEach(func(k, _ []byte) error {
						item, idx, ok := bytes.Cut(k, []byte{0})
						n, err := strconv.Atoi(string(idx))
						if !ok || err != nil {
							return fmt.Errorf("request %q of consumer %q: bad finished-sample record %q", id, consumer, k)
						}
						j.finished[SampleRef{ItemID: string(item), Index: n}] = true
						return nil
					}); err != nil {
						return err
					}
				}
				out = append(out, j)
				return nil
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("stream: read request journal: %w", err)
	}
	return out, nil
}

// doneRequests returns the ids of the consumer's requests whose request_done is spooled and not acked.
func (s *spool) doneRequests(consumer string) ([]string, error) {
	out := []string{}
	err := s.db.View(func(tx *bolt.Tx) error {
		ix := tx.Bucket(bucketIndex).Bucket([]byte(consumer))
		q := tx.Bucket(bucketQueue).Bucket([]byte(consumer))
		if ix == nil || q == nil {
			return nil
		}
		prefix := []byte(doneIDPrefix)
		c := ix.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(v) != 8 {
				continue
			}
			// A trajectory id may start with "done/" too: the record's kind decides.
			if rec := q.Get(seqKey(binary.BigEndian.Uint64(v))); len(rec) > 0 && rec[0] == kindDone {
				out = append(out, string(k[len(prefix):]))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stream: spool read: %w", err)
	}
	return out, nil
}

// doneIDPrefix prefixes a request id to make the spool id of its request_done record.
const doneIDPrefix = "done/"
