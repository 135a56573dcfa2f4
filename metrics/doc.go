// Package metrics turns timed operations into the figures a report holds,
// in bounded memory: per function and phase exact counters and an HDR
// histogram (Stats, fed by the Recorder, which also streams one record per
// operation to disk), the timeline of the run (Timeline), the connect
// breakdown (Breakdown), the generator's own use (UseWatch), the live
// counts of a progress display (Live), and the server's observed figures
// (ServerReport, filled by internal/observe/serverwatch). It never keeps a
// per-operation sample.
package metrics
