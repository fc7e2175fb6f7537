package fakediscord

import (
	"bytes"
	"compress/zlib"
)

// zlibSuffix ends every message of a zlib-stream connection: the empty stored block a sync
// flush writes. A client buffers binary messages until one ends with it, then inflates.
var zlibSuffix = []byte{0x00, 0x00, 0xff, 0xff}

// zlibStream is Discord's transport compression (`compress=zlib-stream` on the gateway URL):
// one zlib context for the whole connection, each message flushed with Z_SYNC_FLUSH, so later
// messages use the dictionary of earlier ones and the client keeps one inflater.
type zlibStream struct {
	buf bytes.Buffer
	z   *zlib.Writer
}

func newZlibStream() *zlibStream {
	zs := &zlibStream{}
	zs.z = zlib.NewWriter(&zs.buf)
	return zs
}

// frame compresses one payload into the stream and returns the bytes of its websocket message,
// ending in 0x00 0x00 0xff 0xff. The caller holds the connection's write lock.
func (zs *zlibStream) frame(payload []byte) []byte {
	zs.buf.Reset()
	_, _ = zs.z.Write(payload) // writes to a bytes.Buffer do not fail
	_ = zs.z.Flush()           // Z_SYNC_FLUSH
	return bytes.Clone(zs.buf.Bytes())
}
