package llm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// sseReader reads the data events of a Chat Completions stream.
//
// Each "data:" line is one event (the colon may or may not be followed by a
// space): providers send one JSON chunk per line, and a server that forgets
// the blank line between events still works. Comment lines (": keep-alive"),
// event:, id: and retry: lines and blank lines are skipped. A line longer
// than the reader's limit is an error (ErrTooLarge), never a partial event.
type sseReader struct {
	r     *bufio.Reader
	limit int
	line  []byte // reused across calls
}

// newSSEReader reads events from r, refusing lines longer than limit bytes.
func newSSEReader(r io.Reader, limit int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 32<<10), limit: limit}
}

var (
	dataPrefix = []byte("data:")
	doneMarker = []byte("[DONE]")
)

// next returns the next data event's payload, valid until the next call;
// io.EOF at the end of the stream. The [DONE] marker is returned as is.
func (s *sseReader) next() ([]byte, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(line, dataPrefix) {
			continue // blank, comment, event:, id:, retry: or a foreign line
		}
		data := line[len(dataPrefix):]
		if len(data) > 0 && data[0] == ' ' {
			data = data[1:]
		}
		if len(data) == 0 {
			continue
		}
		return data, nil
	}
}

// readLine returns one line without its ending (\n, \r\n or a lone \r at
// the end of the input). The last line need not end in a newline.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		frag, err := s.r.ReadSlice('\n')
		if len(s.line)+len(frag) > s.limit+2 { // +2: the line ending
			return nil, fmt.Errorf("%w: a stream line is longer than %d bytes", ErrTooLarge, s.limit)
		}
		s.line = append(s.line, frag...)
		switch {
		case err == nil, errors.Is(err, io.EOF) && len(s.line) > 0:
			line := trimEOL(s.line)
			if len(line) > s.limit {
				return nil, fmt.Errorf("%w: a stream line is longer than %d bytes", ErrTooLarge, s.limit)
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}
