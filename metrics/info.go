package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// infoSeries maps INFO fields onto series: one line each, "field name
// kind [scale]", kind g (gauge) or c (counter), scale a factor to the
// series' unit (microseconds to seconds). Names starting "dfly_" are
// dfly's own; the others get redis_exporter's "redis_" prefix and name.
const infoSeries = `
uptime_in_seconds uptime_in_seconds g
num_shards dfly_shards g
connected_clients connected_clients g
blocked_clients blocked_clients g
tracking_clients tracking_clients g
maxclients max_clients g
client_recent_max_input_buffer client_recent_max_input_buffer_bytes g
client_recent_max_output_buffer client_recent_max_output_buffer_bytes g
used_memory memory_used_bytes g
used_memory_rss memory_used_rss_bytes g
used_memory_peak memory_used_peak_bytes g
maxmemory memory_max_bytes g
mem_fragmentation_ratio mem_fragmentation_ratio g
number_of_cached_scripts number_of_cached_scripts g
number_of_functions number_of_functions g
number_of_libraries number_of_libraries g
mem_reclaims dfly_memory_reclaims_total c
packed_strings_bytes dfly_packed_strings_bytes g
packed_strings_live_bytes dfly_packed_strings_live_bytes g
loading loading_dump_file g
rdb_changes_since_last_save rdb_changes_since_last_save g
rdb_bgsave_in_progress rdb_bgsave_in_progress g
rdb_last_save_time rdb_last_save_timestamp_seconds g
rdb_last_bgsave_status rdb_last_bgsave_status g
rdb_last_bgsave_time_sec rdb_last_bgsave_duration_sec g
rdb_saves rdb_saves_total c
current_save_keys_processed current_save_keys_processed g
aof_enabled aof_enabled g
snapshots_in_progress dfly_snapshots_in_progress g
snapshot_buckets_serialized dfly_snapshot_buckets_serialized_total c
snapshot_buckets_serializing dfly_snapshot_buckets_serializing g
snapshot_big_value_chunks dfly_snapshot_big_value_chunks_total c
snapshot_parked_mutations dfly_snapshot_parked_mutations_total c
snapshot_congested_mutations dfly_snapshot_congested_mutations_total c
snapshot_copied_values dfly_snapshot_copied_values_total c
snapshot_deferred_deletions dfly_snapshot_deferred_deletions_total c
snapshot_journal_while_serializing dfly_snapshot_journal_while_serializing_total c
snapshot_moved_saved dfly_snapshot_moved_saved_total c
snapshot_multikey_captures dfly_snapshot_multikey_captures_total c
snapshot_inline_drains dfly_snapshot_inline_drains_total c
snapshot_max_stall_usec dfly_snapshot_max_stall_seconds g 1e-6
snapshot_max_stall_wall_usec dfly_snapshot_max_stall_wall_seconds g 1e-6
snapshot_max_pending_bytes dfly_snapshot_max_pending_bytes g
total_connections_received connections_received_total c
total_commands_processed commands_processed_total c
rejected_connections rejected_connections_total c
client_query_buffer_limit_disconnections client_query_buffer_limit_disconnections_total c
client_output_buffer_limit_disconnections client_output_buffer_limit_disconnections_total c
total_net_input_bytes net_input_bytes_total c
total_net_output_bytes net_output_bytes_total c
instantaneous_ops_per_sec instantaneous_ops g
instantaneous_input_kbps instantaneous_input_kbps g
instantaneous_output_kbps instantaneous_output_kbps g
pubsub_channels pubsub_channels g
pubsub_patterns pubsub_patterns g
pubsubshard_channels pubsubshard_channels g
tracking_total_keys tracking_total_keys g
tracking_total_items tracking_total_items g
tracking_total_prefixes tracking_total_prefixes g
command_panics dfly_command_panics_total c
total_error_replies total_error_replies c
expired_keys expired_keys_total c
evicted_keys evicted_keys_total c
keyspace_hits keyspace_hits_total c
keyspace_misses keyspace_misses_total c
script_borrowed_runs dfly_script_borrowed_runs_total c
script_borrowed_held_runs dfly_script_borrowed_held_runs_total c
script_borrow_fallbacks dfly_script_borrow_fallbacks_total c
script_forwarded_runs dfly_script_forwarded_runs_total c
script_borrow_asks dfly_script_borrow_asks_total c
script_borrow_answer_wait_us dfly_script_borrow_answer_wait_seconds_total c 1e-6
script_borrow_return_wait_us dfly_script_borrow_return_wait_seconds_total c 1e-6
sync_full replica_resyncs_full c
sync_partial_ok replica_partial_resync_accepted c
sync_partial_err replica_partial_resync_denied c
connected_slaves connected_slaves g
master_repl_offset master_repl_offset g
second_repl_offset second_repl_offset g
repl_backlog_active repl_backlog_is_active g
repl_backlog_size repl_backlog_size g
repl_backlog_first_byte_offset repl_backlog_first_byte_offset g
repl_backlog_histlen repl_backlog_history_bytes g
master_link_status master_link_up g
master_last_io_seconds_ago master_last_io_seconds_ago g
master_sync_in_progress master_sync_in_progress g
slave_repl_offset slave_repl_offset g
dfly_flow_syncs_full dfly_flow_syncs_full_total c
dfly_flow_syncs_partial dfly_flow_syncs_partial_total c
dfly_journal_active dfly_journal_active g
used_cpu_sys cpu_sys_seconds_total c
used_cpu_user cpu_user_seconds_total c
tiered_enabled dfly_tiered_enabled g
tiered_entries dfly_tiered_entries g
tiered_entries_bytes dfly_tiered_entries_bytes g
tiered_allocated_bytes dfly_tiered_allocated_bytes g
tiered_file_size dfly_tiered_file_bytes g
tiered_truncations dfly_tiered_truncations_total c
tiered_reads dfly_tiered_reads_total c
tiered_shared_reads dfly_tiered_shared_reads_total c
tiered_read_serves dfly_tiered_read_serves_total c
tiered_loads dfly_tiered_loads_total c
tiered_sync_loads dfly_tiered_sync_loads_total c
tiered_serializer_reads dfly_tiered_serializer_reads_total c
tiered_serializer_sync_reads dfly_tiered_serializer_sync_reads_total c
tiered_writes dfly_tiered_writes_total c
tiered_written_bytes dfly_tiered_written_bytes_total c
tiered_pending_reads dfly_tiered_pending_reads g
tiered_pending_writes dfly_tiered_pending_writes g
tiered_read_errors dfly_tiered_read_errors_total c
tiered_write_errors dfly_tiered_write_errors_total c
tiered_max_step_us dfly_tiered_max_step_seconds g 1e-6
lock_epoch dfly_lock_epoch g
lock_grants dfly_lock_grants_total c
lock_renewals dfly_lock_renewals_total c
lock_releases dfly_lock_releases_total c
lock_expiries dfly_lock_expiries_total c
lock_delayed_acquisitions dfly_lock_delayed_acquisitions_total c
lock_fenced_rejections dfly_lock_fenced_rejections_total c
lock_waiters dfly_lock_waiters g
`

// instanceLabels are the INFO fields redis_instance_info carries as
// labels, as redis_exporter's.
var instanceLabels = []string{"redis_version", "dfly_version", "redis_mode", "os", "run_id", "tcp_port", "maxmemory_policy", "role"}

// series is one INFO field's series.
type series struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	scale float64
}

// infoTable is infoSeries parsed, by INFO field.
var infoTable = parseInfoSeries(infoSeries)

func parseInfoSeries(table string) map[string]series {
	out := map[string]series{}
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		f := strings.Fields(line)
		name := f[1]
		if !strings.HasPrefix(name, "dfly_") {
			name = "redis_" + name
		}
		s := series{desc: prometheus.NewDesc(name, "INFO "+f[0], nil, nil), kind: prometheus.GaugeValue, scale: 1}
		if f[2] == "c" {
			s.kind = prometheus.CounterValue
		}
		if len(f) > 3 {
			s.scale = mustFloat(f[3])
		}
		out[f[0]] = s
	}
	return out
}
