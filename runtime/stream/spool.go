package stream

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The spool is a bbolt database (one file, spool.db) that holds every spooled message until its consumer acks it.
//
//	bucket "meta":            "seq" -> last assigned sequence number (uint64 big endian)
//	                          "id"  -> the spool's random id (hex), made when the file is created
//	bucket "q" / <consumer>:  seq (uint64 big endian) -> record value
//	bucket "t" / <consumer>:  trajectory id -> seq
//	bucket "r" / <consumer> / <request id>:  the request journal (see journal.go)
//
// A record value is: kind (1 byte), len(id) (uint16 big endian), id, tail. The frame sent to the consumer is
// `{"type":"<kind>","seq":<seq>` followed by tail, so a frame is never re-encoded between spool and socket.
//
// One committer goroutine applies puts and acks in batches: one write transaction, one fsync, for everything
// that arrived while the previous batch committed (group commit).

const (
	kindTrajectory byte = 1
	kindDone       byte = 2

	maxIDLen = 1 << 12 // longest trajectory or request id the spool stores
)

var (
	bucketMeta  = []byte("meta")
	bucketQueue = []byte("q")
	bucketIndex = []byte("t")
	bucketReqs  = []byte("r")
	keySeq      = []byte("seq")
	keySpoolID  = []byte("id")
)

type spoolConfig struct {
	dir        string
	maxRecords int
	maxBytes   int64
	noSync     bool
	cacheBytes int64
}

type spool struct {
	db  *bolt.DB
	cfg spoolConfig
	id  string // sequence numbers mean something only within one spool

	ops    chan *spoolOp
	stop   chan struct{}
	exited chan struct{}

	mu          sync.Mutex
	closed      bool
	count       int
	bytes       int64
	perConsumer map[string]int
	spaceFreed  chan struct{} // closed (and replaced) whenever space is released
	notify      map[string]map[chan struct{}]struct{}

	commits uint64 // write transactions committed (guarded by mu)

	// cache holds the values of recently committed records (guarded by mu), so the writer of a connection
	// that keeps up sends them without reading them back from the database. Bounded by cfg.cacheBytes;
	// evicted oldest first (an evicted record is read from the database when it is sent).
	cache      map[uint64][]byte
	cacheFIFO  []uint64
	cacheBytes int64
}

type spoolOpKind int

const (
	opPut spoolOpKind = iota
	opAck
	opDrop
	opJournal       // record an accepted request
	opJournalCancel // mark a journaled request cancelled
)

type spoolOp struct {
	kind     spoolOpKind
	consumer string

	// put
	id   string
	val  []byte // kind, len(id), id, tail: see the layout above
	size int64
	jr   journalRef // the journaled request the record belongs to, if any

	// ack
	seqs    []uint64
	ids     []string
	deleted []uint64

	done chan struct{}
	// results
	seq uint64
	dup bool
	n   int
	err error
}

// spooled is one record ready to send: the frame is head followed by tail. tail may be shared with the cache
// and must not be modified.
type spooled struct {
	seq  uint64
	kind byte
	id   string
	head []byte
	tail []byte
}

func (r spooled) size() int { return len(r.head) + len(r.tail) }

func openSpool(cfg spoolConfig) (*spool, error) {
	if err := os.MkdirAll(cfg.dir, 0o700); err != nil {
		return nil, fmt.Errorf("stream: spool dir: %w", err)
	}
	path := filepath.Join(cfg.dir, "spool.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:        time.Second,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		NoSync:         cfg.noSync,
		// Map enough up front that a growing spool rarely remaps (a remap waits for every reader).
		InitialMmapSize: int(min(2*cfg.maxBytes, 1<<30)),
	})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("stream: spool %s is locked by another process (is another agentrt serve running with the same spool dir?)", path)
		}
		return nil, fmt.Errorf("stream: open spool %s: %w", path, err)
	}
	s := &spool{
		db:          db,
		cfg:         cfg,
		ops:         make(chan *spoolOp, 1024),
		stop:        make(chan struct{}),
		exited:      make(chan struct{}),
		perConsumer: map[string]int{},
		spaceFreed:  make(chan struct{}),
		notify:      map[string]map[chan struct{}]struct{}{},
		cache:       map[uint64][]byte{},
	}
	var seq uint64
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keySeq); len(v) == 8 {
			seq = binary.BigEndian.Uint64(v)
		}
		if v := meta.Get(keySpoolID); len(v) > 0 {
			s.id = string(v)
		} else {
			var b [8]byte
			rand.Read(b[:])
			s.id = hex.EncodeToString(b[:])
			if err := meta.Put(keySpoolID, []byte(s.id)); err != nil {
				return err
			}
		}
		q, err := tx.CreateBucketIfNotExists(bucketQueue)
		if err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketIndex); err != nil {
			return err
		}
		if _, err := tx.CreateBucketIfNotExists(bucketReqs); err != nil {
			return err
		}
		return q.ForEachBucket(func(name []byte) error {
			c := q.Bucket(name)
			return c.ForEach(func(k, v []byte) error {
				s.count++
				s.bytes += int64(len(v))
				s.perConsumer[string(name)]++
				return nil
			})
		})
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("stream: read spool %s: %w", path, err)
	}
	go s.commitLoop(seq)
	return s, nil
}

// close stops the committer after it has applied every queued operation, then closes the database.
func (s *spool) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.exited
		return nil
	}
	s.closed = true
	close(s.spaceFreed)
	s.mu.Unlock()
	close(s.stop)
	<-s.exited
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("stream: close spool: %w", err)
	}
	return nil
}

// stats returns the number of records and bytes held.
func (s *spool) stats() (count int, bytes int64, commits uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count, s.bytes, s.commits
}

func (s *spool) unacked(consumer string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.perConsumer[consumer]
}

// watch returns a channel that receives a value whenever a record is added for consumer, and a func that
// stops the watch.
func (s *spool) watch(consumer string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.notify[consumer]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		s.notify[consumer] = set
	}
	set[ch] = struct{}{}
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(set, ch)
		if len(set) == 0 && s.notify[consumer] != nil && len(s.notify[consumer]) == 0 {
			delete(s.notify, consumer)
		}
	}
}

func (s *spool) signal(consumer string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.notify[consumer] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// reserve waits for room for one record of size bytes.
func (s *spool) reserve(ctx context.Context, size int64) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		fits := s.count == 0 || (s.count+1 <= s.cfg.maxRecords && s.bytes+size <= s.cfg.maxBytes)
		if fits {
			s.count++
			s.bytes += size
			s.mu.Unlock()
			return nil
		}
		wait := s.spaceFreed
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return fmt.Errorf("stream: spool full (%d records): %w", s.cfg.maxRecords, ctx.Err())
		}
	}
}

// release returns space and wakes the writers waiting for it.
func (s *spool) release(n int, size int64) {
	if n == 0 && size == 0 {
		return
	}
	s.mu.Lock()
	s.count -= n
	s.bytes -= size
	if !s.closed {
		close(s.spaceFreed)
		s.spaceFreed = make(chan struct{})
	}
	s.mu.Unlock()
}

// recordValue builds a record value with room for tailLen bytes of tail, which the caller appends.
func recordValue(kind byte, id string, tailLen int) []byte {
	v := make([]byte, 0, 3+len(id)+tailLen)
	v = append(v, kind, byte(len(id)>>8), byte(len(id)))
	return append(v, id...)
}

// put stores a record and returns its sequence number once it is committed. If the consumer already has a
// record with this id, put stores nothing and returns the existing sequence number with dup true.
func (s *spool) put(ctx context.Context, consumer string, kind byte, id string, tail []byte) (uint64, bool, error) {
	if len(id) > maxIDLen {
		return 0, false, fmt.Errorf("stream: id longer than %d bytes", maxIDLen)
	}
	return s.putValue(ctx, consumer, id, append(recordValue(kind, id, len(tail)), tail...), journalRef{})
}

// putValue is put with a value built by recordValue (the trajectory hot path: one copy of the trajectory).
// jr names the journaled request the record belongs to: a trajectory is recorded as one of its finished
// samples, a request_done (jr.end) deletes its journal entry, in the same transaction as the put.
func (s *spool) putValue(ctx context.Context, consumer string, id string, val []byte, jr journalRef) (uint64, bool, error) {
	size := int64(len(val))
	if err := s.reserve(ctx, size); err != nil {
		return 0, false, err
	}
	op := &spoolOp{kind: opPut, consumer: consumer, id: id, val: val, size: size, jr: jr, done: make(chan struct{})}
	if err := s.submit(op); err != nil {
		s.release(1, size)
		return 0, false, err
	}
	return op.seq, op.dup, op.err
}

// ack deletes the consumer's records named by sequence number or id; unknown ones are ignored. It returns the
// number of records deleted.
func (s *spool) ack(consumer string, seqs []uint64, ids []string) (int, error) {
	op := &spoolOp{kind: opAck, consumer: consumer, seqs: seqs, ids: ids, done: make(chan struct{})}
	if err := s.submit(op); err != nil {
		return 0, err
	}
	return op.n, op.err
}

// drop deletes every record of consumer.
func (s *spool) drop(consumer string) (int, error) {
	op := &spoolOp{kind: opDrop, consumer: consumer, done: make(chan struct{})}
	if err := s.submit(op); err != nil {
		return 0, err
	}
	return op.n, op.err
}

func (s *spool) submit(op *spoolOp) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	select {
	case s.ops <- op:
	case <-s.stop:
		return ErrClosed
	}
	select {
	case <-op.done:
		return nil
	case <-s.exited:
		select {
		case <-op.done:
			return nil
		default:
			return ErrClosed
		}
	}
}

func (s *spool) commitLoop(seq uint64) {
	defer close(s.exited)
	batch := make([]*spoolOp, 0, 256)
	for {
		batch = batch[:0]
		select {
		case op := <-s.ops:
			batch = append(batch, op)
		case <-s.stop:
			// Apply what is still queued, then exit.
			for {
				select {
				case op := <-s.ops:
					batch = append(batch, op)
					continue
				default:
				}
				break
			}
			if len(batch) > 0 {
				seq = s.commit(seq, batch)
			}
			return
		}
	fill:
		for len(batch) < cap(batch) {
			select {
			case op := <-s.ops:
				batch = append(batch, op)
			default:
				break fill
			}
		}
		seq = s.commit(seq, batch)
	}
}

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// commit applies a batch in one transaction and answers every operation.
func (s *spool) commit(seq uint64, batch []*spoolOp) uint64 {
	next := seq
	type freed struct {
		n    int
		size int64
	}
	var released freed
	perConsumer := map[string]int{}
	added := map[string]bool{}
	err := s.db.Update(func(tx *bolt.Tx) error {
		next = seq
		released = freed{}
		clear(perConsumer)
		clear(added)
		qb, ib := tx.Bucket(bucketQueue), tx.Bucket(bucketIndex)
		for _, op := range batch {
			op.err, op.dup, op.n, op.seq, op.deleted = nil, false, 0, 0, op.deleted[:0]
			switch op.kind {
			case opPut:
				q, err := qb.CreateBucketIfNotExists([]byte(op.consumer))
				if err != nil {
					return err
				}
				ix, err := ib.CreateBucketIfNotExists([]byte(op.consumer))
				if err != nil {
					return err
				}
				if err := journalRecord(tx, op.consumer, op.jr); err != nil {
					return err
				}
				if v := ix.Get([]byte(op.id)); len(v) == 8 {
					op.seq, op.dup = binary.BigEndian.Uint64(v), true
					released.n++
					released.size += op.size
					continue
				}
				next++
				// bbolt keeps the slice until the commit writes it; nobody else holds it.
				if err := q.Put(seqKey(next), op.val); err != nil {
					return err
				}
				if err := ix.Put([]byte(op.id), seqKey(next)); err != nil {
					return err
				}
				op.seq = next
				perConsumer[op.consumer]++
				added[op.consumer] = true
			case opJournal:
				dup, err := journalPut(tx, op.consumer, op.id, op.val)
				if err != nil {
					return err
				}
				op.dup = dup
			case opJournalCancel:
				if err := journalCancel(tx, op.consumer, op.id); err != nil {
					return err
				}
			case opAck, opDrop:
				q, ix := qb.Bucket([]byte(op.consumer)), ib.Bucket([]byte(op.consumer))
				if q == nil || ix == nil {
					continue
				}
				del := func(seq uint64) error {
					k := seqKey(seq)
					v := q.Get(k)
					if len(v) < 3 {
						return nil
					}
					idLen := int(v[1])<<8 | int(v[2])
					id := append([]byte(nil), v[3:3+idLen]...)
					released.n++
					released.size += int64(len(v))
					op.n++
					op.deleted = append(op.deleted, seq)
					perConsumer[op.consumer]--
					if err := q.Delete(k); err != nil {
						return err
					}
					return ix.Delete(id)
				}
				if op.kind == opDrop {
					var all []uint64
					if err := q.ForEach(func(k, _ []byte) error {
						all = append(all, binary.BigEndian.Uint64(k))
						return nil
					}); err != nil {
						return err
					}
					op.seqs = all
				}
				for _, sq := range op.seqs {
					if err := del(sq); err != nil {
						return err
					}
				}
				for _, id := range op.ids {
					if v := ix.Get([]byte(id)); len(v) == 8 {
						if err := del(binary.BigEndian.Uint64(v)); err != nil {
							return err
						}
					}
				}
			}
		}
		if next != seq {
			return tx.Bucket(bucketMeta).Put(keySeq, seqKey(next))
		}
		return nil
	})
	if err != nil {
		err = fmt.Errorf("stream: spool commit: %w", err)
		var n int
		var size int64
		for _, op := range batch {
			op.err = err
			if op.kind == opPut {
				n++
				size += op.size
			}
		}
		s.release(n, size)
		for _, op := range batch {
			close(op.done)
		}
		return seq
	}
	s.mu.Lock()
	s.commits++
	for _, op := range batch {
		switch {
		case op.kind == opPut && !op.dup:
			s.cacheAdd(op.seq, op.val)
		case op.kind == opAck || op.kind == opDrop:
			for _, sq := range op.deleted {
				s.cacheDel(sq)
			}
		}
	}
	for c, d := range perConsumer {
		s.perConsumer[c] += d
		if s.perConsumer[c] <= 0 {
			delete(s.perConsumer, c)
		}
	}
	s.mu.Unlock()
	s.release(released.n, released.size)
	for _, op := range batch {
		close(op.done)
	}
	for c := range added {
		s.signal(c)
	}
	return next
}

// next returns up to max records of consumer with a sequence number above after, in order, as ready-to-send
// frames, stopping early once maxBytes is reached (at least one record is returned when there is one).
func (s *spool) next(consumer string, after uint64, max int, maxBytes int64) ([]spooled, error) {
	var out []spooled
	err := s.db.View(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucketQueue).Bucket([]byte(consumer))
		if q == nil {
			return nil
		}
		c := q.Cursor()
		var total int64
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < max; k, v = c.Next() {
			sq := binary.BigEndian.Uint64(k)
			s.mu.Lock()
			cached, hit := s.cache[sq]
			s.mu.Unlock()
			if hit {
				v = cached
			}
			if len(v) < 3 {
				continue
			}
			idLen := int(v[1])<<8 | int(v[2])
			tail := v[3+idLen:]
			if !hit {
				tail = append([]byte(nil), tail...) // v lives in the mmap only until the transaction ends
			}
			var typ string
			switch v[0] {
			case kindTrajectory:
				typ = TypeTrajectory
			case kindDone:
				typ = TypeRequestDone
			default:
				continue
			}
			head := make([]byte, 0, len(`{"type":"","seq":`)+len(typ)+20)
			head = append(head, `{"type":"`...)
			head = append(head, typ...)
			head = append(head, `","seq":`...)
			head = strconv.AppendUint(head, sq, 10)
			r := spooled{seq: sq, kind: v[0], id: string(v[3 : 3+idLen]), head: head, tail: tail}
			out = append(out, r)
			total += int64(r.size())
			if total >= maxBytes {
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stream: spool read: %w", err)
	}
	return out, nil
}

// cacheAdd caches a committed record's value, evicting the oldest to stay within the bound (mu held).
func (s *spool) cacheAdd(seq uint64, val []byte) {
	if int64(len(val)) > s.cfg.cacheBytes {
		return
	}
	for s.cacheBytes+int64(len(val)) > s.cfg.cacheBytes && len(s.cacheFIFO) > 0 {
		old := s.cacheFIFO[0]
		s.cacheFIFO = s.cacheFIFO[1:]
		s.cacheDel(old)
	}
	s.cache[seq] = val
	s.cacheBytes += int64(len(val))
	s.cacheFIFO = append(s.cacheFIFO, seq)
	// Acked records leave the map but not the FIFO; compact it when it is mostly stale.
	if len(s.cacheFIFO) > 2*len(s.cache)+1024 {
		live := s.cacheFIFO[:0]
		for _, sq := range s.cacheFIFO {
			if _, ok := s.cache[sq]; ok {
				live = append(live, sq)
			}
		}
		s.cacheFIFO = append([]uint64(nil), live...)
	}
}

// cacheDel drops a record from the cache (mu held).
func (s *spool) cacheDel(seq uint64) {
	if v, ok := s.cache[seq]; ok {
		s.cacheBytes -= int64(len(v))
		delete(s.cache, seq)
	}
}
