package tcpdoor

// ReadBufSize is the size of the read path's buffers, for tests.
const ReadBufSize = readBufSize
