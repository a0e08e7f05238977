"""The two tiers of the test suite.

`python3 -m pytest -q` (the README's test command) runs the quick tier: every test, except that each parametrized
test named in HEAVY runs about one case in EVERY: its first case (in collection order), and the cases whose node
id hashes (CRC-32) to 0 modulo EVERY. (A hash, not every EVERY-th case: parameter grids of 2, 3 or 6 values would
alias with a stride, leaving, say, only the f32 cases of a dtype x size grid in the quick tier.) `python3 -m pytest -q -m extended` runs the other cases; `.ci/run` runs both tiers, so CI still runs
every case. (`-m ""` runs everything in one go.)

HEAVY: the parametrized tests of three seconds or more in all and four cases or more, measured with
`python3 -m pytest -q -n 2 --durations=0` in a fresh clone on 2 cores (2026-12-01, 6,367 tests: 4,737 s of test
time, 3,870 s of it in parametrized cases). Random-program tests, every-sample sweeps and size sweeps: their cases
differ in a seed or a size, and one in EVERY of them still covers each kind of case the test draws. (The
differential test of sim against mlu-sim is not thinned: issue 12 asks for its 200 programs in every run.)
"""
from __future__ import annotations

import zlib

EVERY = 6

HEAVY = frozenset({
    "tests/analysis/test_counting.py::test_every_access_count_matches_isl",   # 5 s, 4 cases
    "tests/api/test_api.py::test_softmax_from_path_matches_reference",   # 3 s, 6 cases
    "tests/cuda_emu/test_emu_samples.py::test_sample_all_sizes_one_schedule",   # 38 s, 43 cases
    "tests/cuda_emu/test_emu_samples.py::test_sample_scheduled_per_sizes",   # 59 s, 125 cases
    "tests/differential/test_scan_programs.py::test_random_scan_program_agrees",   # 101 s, 61 cases
    "tests/frontend/test_fmt_comments.py::test_idempotent_and_same_ir",   # 4 s, 99 cases
    "tests/fuzz/test_fuzz.py::test_mutated_samples",   # 23 s, 4 cases
    "tests/fuzz/test_hostile.py::test_hostile_input",   # 220 s, 65 cases
    "tests/middle/test_narrow_results.py::test_forwarded_narrow_reduction_result_is_rounded",   # 5 s, 16 cases
    "tests/middle/test_random_programs.py::test_random_program",   # 186 s, 120 cases
    "tests/middle/test_scan.py::test_sim_matches_numpy",   # 3 s, 10 cases
    "tests/middle/test_scan_siblings.py::test_random_siblings_match_numpy",   # 9 s, 16 cases
    "tests/mlu_compile/test_mlu_ast.py::test_random_program_kernels_are_ast",   # 70 s, 40 cases
    "tests/mlu_compile/test_mlu_ast.py::test_sample_kernels_are_ast",   # 13 s, 43 cases
    "tests/mlu_compile/test_mlu_batched_transpose.py::test_batched_transpose_values",   # 10 s, 48 cases
    "tests/mlu_compile/test_mlu_bool_logic.py::test_logic_and_casts_match_the_evaluator",   # 21 s, 40 cases
    "tests/mlu_compile/test_mlu_bool_logic.py::test_no_scalar_kernel",   # 6 s, 10 cases
    "tests/mlu_compile/test_mlu_bool_report.py::test_bool_samples_run_fused",   # 5 s, 12 cases
    "tests/mlu_compile/test_mlu_bool_report.py::test_cross_entropy_hoists_row_vectors",   # 5 s, 6 cases
    "tests/mlu_compile/test_mlu_bool_report.py::test_opbyop_uses_vector_schedules",   # 9 s, 5 cases
    "tests/mlu_compile/test_mlu_bugfixes.py::test_bool_results_of_pipelined_kernels",   # 13 s, 6 cases
    "tests/mlu_compile/test_mlu_bugfixes.py::test_floored_integer_division_in_scalar_kernels",   # 5 s, 12 cases
    "tests/mlu_compile/test_mlu_bugfixes.py::test_integer_select_over_a_nested_reduction",   # 5 s, 12 cases
    "tests/mlu_compile/test_mlu_bugfixes.py::test_integer_select_over_a_nested_reduction_that_stays_nested",   # 14 s, 9 cases
    "tests/mlu_compile/test_mlu_bugfixes.py::test_whole_reductions_with_a_scalar_input",   # 7 s, 30 cases
    "tests/mlu_compile/test_mlu_colreduce_16bit.py::test_col_16bit_matches_reference",   # 4 s, 24 cases
    "tests/mlu_compile/test_mlu_cols_long.py::test_16bit_kept_tiles_stay_aligned",   # 3 s, 4 cases
    "tests/mlu_compile/test_mlu_cols_long.py::test_element_types_and_operands",   # 9 s, 6 cases
    "tests/mlu_compile/test_mlu_cols_long.py::test_every_op_and_form",   # 36 s, 16 cases
    "tests/mlu_compile/test_mlu_cols_long.py::test_sizes",   # 11 s, 4 cases
    "tests/mlu_compile/test_mlu_cols_long.py::test_tiles_kept_in_sram",   # 45 s, 6 cases
    "tests/mlu_compile/test_mlu_compile.py::test_fused_roofline_large",   # 15 s, 10 cases
    "tests/mlu_compile/test_mlu_compile.py::test_row_samples_odd_sizes",   # 4 s, 12 cases
    "tests/mlu_compile/test_mlu_compile.py::test_sample_matches_reference",   # 33 s, 127 cases
    "tests/mlu_compile/test_mlu_constfold.py::test_constant_subexpressions_are_vectorised",   # 4 s, 5 cases
    "tests/mlu_compile/test_mlu_cost_bytes.py::test_estimated_gdram_bytes_are_the_simulated_ones",   # 4 s, 6 cases
    "tests/mlu_compile/test_mlu_cost_pipelined.py::test_estimates_are_the_simulated_times",   # 8 s, 4 cases
    "tests/mlu_compile/test_mlu_delinear.py::test_reshapes_match_the_evaluator",   # 14 s, 36 cases
    "tests/mlu_compile/test_mlu_exact_division.py::test_quotients_of_equal_values_are_one",   # 3 s, 12 cases
    "tests/mlu_compile/test_mlu_flat_rank.py::test_arg_reductions_over_rows_beyond_nram",   # 15 s, 6 cases
    "tests/mlu_compile/test_mlu_flat_rank.py::test_left_alone",   # 4 s, 5 cases
    "tests/mlu_compile/test_mlu_fuzz_fixes.py::test_causal_softmax_small_sizes_checked_and_correct",   # 5 s, 9 cases
    "tests/mlu_compile/test_mlu_groups.py::test_random_multi_group_functions_agree_with_the_evaluator",   # 21 s, 24 cases
    "tests/mlu_compile/test_mlu_index_tensors.py::test_index_values_from_index_tensors",   # 19 s, 7 cases
    "tests/mlu_compile/test_mlu_layout_long.py::test_shared_working_tiles_match",   # 4 s, 4 cases
    "tests/mlu_compile/test_mlu_long_scan.py::test_16bit_operands_kept_and_read_again",   # 63 s, 32 cases
    "tests/mlu_compile/test_mlu_long_scan.py::test_chunk_carries_in_either_phase",   # 18 s, 16 cases
    "tests/mlu_compile/test_mlu_long_scan.py::test_chunks_kept_in_sram",   # 20 s, 5 cases
    "tests/mlu_compile/test_mlu_long_scan.py::test_every_op_and_form_across_ranges",   # 17 s, 16 cases
    "tests/mlu_compile/test_mlu_long_scan.py::test_nan_propagates_through_the_carries",   # 13 s, 5 cases
    "tests/mlu_compile/test_mlu_long_scan.py::test_types_rows_and_partial_chunks",   # 9 s, 8 cases
    "tests/mlu_compile/test_mlu_longrows_groupnorm.py::test_long_rows_match_evaluator",   # 7 s, 10 cases
    "tests/mlu_compile/test_mlu_nram_count.py::test_random_program_kernels_nram_counted_exactly",   # 14 s, 60 cases
    "tests/mlu_compile/test_mlu_nram_count.py::test_sample_kernels_nram_counted_exactly",   # 24 s, 43 cases
    "tests/mlu_compile/test_mlu_opbyop_views.py::test_generic_trailing_axes_statement_alone_is_vectorised",   # 4 s, 8 cases
    "tests/mlu_compile/test_mlu_opbyop_views.py::test_group_norm_opbyop_vectorised_and_exact",   # 6 s, 4 cases
    "tests/mlu_compile/test_mlu_pair_blocks.py::test_uneven_blocks_values",   # 9 s, 6 cases
    "tests/mlu_compile/test_mlu_permute_any.py::test_rank3_permutations",   # 14 s, 80 cases
    "tests/mlu_compile/test_mlu_permute_any.py::test_rank4_permutations",   # 9 s, 23 cases
    "tests/mlu_compile/test_mlu_permute_any.py::test_short_rows_move_packed",   # 4 s, 20 cases
    "tests/mlu_compile/test_mlu_permuted_operands.py::test_random_permuted_programs_match_the_evaluator",   # 16 s, 24 cases
    "tests/mlu_compile/test_mlu_pipeline_text.py::test_pipeline_output_is_the_strategies_output",   # 5 s, 6 cases
    "tests/mlu_compile/test_mlu_recipes.py::test_random_programs_the_search_ranks_like_the_simulator",   # 49 s, 9 cases
    "tests/mlu_compile/test_mlu_recipes.py::test_rows_blocked_values",   # 45 s, 36 cases
    "tests/mlu_compile/test_mlu_recipes.py::test_the_estimate_tracks_the_simulated_time",   # 3 s, 8 cases
    "tests/mlu_compile/test_mlu_recipes.py::test_the_search_picks_a_candidate_the_simulator_finds_fastest",   # 7 s, 9 cases
    "tests/mlu_compile/test_mlu_reduce3d.py::test_matches_evaluator_and_checks",   # 13 s, 28 cases
    "tests/mlu_compile/test_mlu_reductions_index.py::test_matches_reference",   # 9 s, 18 cases
    "tests/mlu_compile/test_mlu_reductions_index.py::test_near_roofline",   # 7 s, 4 cases
    "tests/mlu_compile/test_mlu_reverse.py::test_reverse_variants_values",   # 3 s, 12 cases
    "tests/mlu_compile/test_mlu_reverse_compute.py::test_reverse_compute_values",   # 4 s, 12 cases
    "tests/mlu_compile/test_mlu_scan.py::test_16bit_max_min_scans_compute_in_16_bits",   # 32 s, 40 cases
    "tests/mlu_compile/test_mlu_scan.py::test_16bit_operands_read_per_lane_or_per_position",   # 17 s, 10 cases
    "tests/mlu_compile/test_mlu_scan.py::test_16bit_rows_transposed_in_16_bits",   # 34 s, 24 cases
    "tests/mlu_compile/test_mlu_scan.py::test_dense_lane_chunks",   # 7 s, 48 cases
    "tests/mlu_compile/test_mlu_scan.py::test_doubling_steps_every_op_and_form",   # 44 s, 80 cases
    "tests/mlu_compile/test_mlu_scan.py::test_f32_every_op_and_form",   # 10 s, 32 cases
    "tests/mlu_compile/test_mlu_scan.py::test_other_types_middle_and_last_axis",   # 4 s, 24 cases
    "tests/mlu_compile/test_mlu_scan_bands.py::test_random_programs_on_several_bands",   # 72 s, 16 cases
    "tests/mlu_compile/test_mlu_scan_bands.py::test_several_bands_with_little_sram",   # 65 s, 4 cases
    "tests/mlu_compile/test_mlu_scan_cross.py::test_random_cross_programs",   # 80 s, 24 cases
    "tests/mlu_compile/test_mlu_scan_group.py::test_random_group_agrees",   # 50 s, 40 cases
    "tests/mlu_compile/test_mlu_scan_overlap.py::test_group_of_scans_walking_one_way_overlaps_too",   # 12 s, 4 cases
    "tests/mlu_compile/test_mlu_scan_overlap.py::test_group_walking_both_ways_overlaps",   # 102 s, 36 cases
    "tests/mlu_compile/test_mlu_scan_overlap.py::test_values_with_the_overlapping_last_tile",   # 128 s, 144 cases
    "tests/mlu_compile/test_mlu_scan_rows.py::test_random_row_scans_in_whole_row_units",   # 15 s, 24 cases
    "tests/mlu_compile/test_mlu_scan_rows.py::test_time_of_whole_row_units",   # 11 s, 4 cases
    "tests/mlu_compile/test_mlu_scan_size.py::test_random_row_scans_at_balanced_sizes",   # 11 s, 10 cases
    "tests/mlu_compile/test_mlu_scan_size.py::test_simulated_time",   # 19 s, 6 cases
    "tests/mlu_compile/test_mlu_scan_size.py::test_simulated_time_shared_temporaries",   # 10 s, 5 cases
    "tests/mlu_compile/test_mlu_scan_size.py::test_values_where_longer_segments_are_timed",   # 5 s, 4 cases
    "tests/mlu_compile/test_mlu_scan_subseg.py::test_random_row_scans_in_sub_segments",   # 18 s, 24 cases
    "tests/mlu_compile/test_mlu_scan_units.py::test_random_single_tile_scans",   # 32 s, 24 cases
    "tests/mlu_compile/test_mlu_scan_wide.py::test_wide_column_scan_values",   # 9 s, 8 cases
    "tests/mlu_compile/test_mlu_sim_contract.py::test_broadcast_over_several_axes",   # 5 s, 10 cases
    "tests/mlu_compile/test_mlu_sim_contract.py::test_statistics_over_leading_axes_then_broadcast",   # 8 s, 12 cases
    "tests/mlu_compile/test_mlu_single_pass_long.py::test_single_pass_at_one_row_budget_matches_evaluator",   # 5 s, 8 cases
    "tests/mlu_compile/test_mlu_slab_cluster.py::test_random_statistics_programs_with_the_grid_slab",   # 14 s, 6 cases
    "tests/mlu_compile/test_mlu_slab_cluster.py::test_random_statistics_programs_with_the_shared_slab",   # 20 s, 12 cases
    "tests/mlu_compile/test_mlu_slab_cluster.py::test_time_of_the_column_softmax",   # 11 s, 7 cases
    "tests/mlu_compile/test_mlu_slab_cluster.py::test_values_with_the_shared_slab",   # 12 s, 9 cases
    "tests/mlu_compile/test_mlu_slab_cluster.py::test_values_with_the_slab_shared_by_every_core",   # 10 s, 5 cases
    "tests/mlu_compile/test_mlu_slab_group_stats.py::test_group_statistics_in_a_slab_a_cluster_shares",   # 17 s, 16 cases
    "tests/mlu_compile/test_mlu_slab_group_stats.py::test_group_statistics_in_a_slab_every_core_shares",   # 13 s, 6 cases
    "tests/mlu_compile/test_mlu_slab_group_stats.py::test_time_of_group_norms_with_few_groups",   # 5 s, 4 cases
    "tests/mlu_compile/test_mlu_slab_group_stats.py::test_whole_rounds_one_unit_per_core_then_the_rest_shared",   # 36 s, 10 cases
    "tests/mlu_compile/test_mlu_split_rows.py::test_last_part_never_one_column",   # 4 s, 5 cases
    "tests/mlu_compile/test_mlu_split_rows.py::test_samples_with_few_long_rows",   # 6 s, 9 cases
    "tests/mlu_compile/test_mlu_split_rows.py::test_whole_vector_arg_reductions_as_one_row",   # 32 s, 8 cases
    "tests/mlu_compile/test_mlu_tail_fill.py::test_padded_row_reductions_match_evaluator",   # 12 s, 18 cases
    "tests/mlu_compile/test_mlu_tile_skip.py::test_samples_pick_as_with_every_plan_built",   # 6 s, 4 cases
    "tests/mlu_compile/test_mlu_tile_skip.py::test_the_pick_is_the_one_with_every_plan_built",   # 8 s, 8 cases
    "tests/mlu_compile/test_mlu_tiles.py::test_generic_programs",   # 15 s, 18 cases
    "tests/mlu_compile/test_mlu_tiles.py::test_nram_estimate_matches_the_emitter",   # 16 s, 9 cases
    "tests/mlu_compile/test_mlu_tiles.py::test_samples_near_the_dma_roofline",   # 17 s, 9 cases
    "tests/mlu_compile/test_mlu_tiles.py::test_samples_values_and_one_kernel",   # 60 s, 27 cases
    "tests/mlu_compile/test_mlu_tiles_row_inputs.py::test_values",   # 24 s, 10 cases
    "tests/mlu_compile/test_mlu_vecprep.py::test_argreduce_blocked_or_cyclic_values",   # 3 s, 4 cases
    "tests/mlu_compile/test_mlu_workcount.py::test_no_kernel_beats_its_floor",   # 61 s, 42 cases
    "tests/passes/test_hoist.py::test_targets_compute_the_hoisted_program",   # 5 s, 6 cases
    "tests/passes/test_pass_semantics.py::test_samples_keep_their_meaning",   # 10 s, 258 cases
    "tests/schedule/test_col_misaligned.py::test_values",   # 20 s, 32 cases
    "tests/schedule/test_gpu_bugfixes.py::test_nan_propagates_on_sim",   # 8 s, 9 cases
    "tests/schedule/test_gpu_bugfixes.py::test_short_rows_schedule_and_run",   # 13 s, 24 cases
    "tests/schedule/test_halo.py::test_stencils_are_staged_and_correct",   # 7 s, 4 cases
    "tests/schedule/test_misaligned_rows.py::test_norm_rows_shifted_with_staged_weights",   # 3 s, 4 cases
    "tests/schedule/test_misaligned_rows.py::test_short_odd_and_single_rows",   # 6 s, 12 cases
    "tests/schedule/test_scan_chained.py::test_columns_every_op_and_form",   # 7 s, 16 cases
    "tests/schedule/test_scan_chained.py::test_every_op_and_form_1d",   # 5 s, 16 cases
    "tests/schedule/test_scan_misaligned.py::test_more_shapes_off_the_sector",   # 5 s, 4 cases
    "tests/schedule/test_scan_misaligned.py::test_values_at_the_scheduled_and_other_sizes",   # 10 s, 10 cases
    "tests/schedule/test_schedule.py::test_every_sample_lowers_verifies_and_round_trips",   # 43 s, 86 cases
    "tests/schedule/test_schedule.py::test_fused_groups_are_one_kernel_without_temporaries",   # 8 s, 17 cases
    "tests/schedule/test_sim.py::test_sample_matches_evaluator",   # 62 s, 172 cases
    "tests/schedule/test_sim.py::test_traffic_at_4096",   # 22 s, 5 cases
    "tests/schedule/test_traffic.py::test_global_bytes_within_goal_of_compulsory",   # 175 s, 43 cases
    "tests/sim/test_argreduce_targets.py::test_cuda_emulator",   # 3 s, 4 cases
    "tests/sim/test_argreduce_targets.py::test_in_expressions_and_nested",   # 25 s, 9 cases
    "tests/sim/test_argreduce_targets.py::test_simulators",   # 95 s, 32 cases
    "tests/sim/test_math_builtins_targets.py::test_cuda_emulator",   # 4 s, 9 cases
    "tests/sim/test_math_builtins_targets.py::test_simulators",   # 15 s, 18 cases
})


def extended(nodeid: str, index: int) -> bool:
    """Whether the case `index` (0-based, in collection order) of the parametrized test `nodeid` is in the
    extended tier."""
    return nodeid.split("[")[0] in HEAVY and index != 0 and zlib.crc32(nodeid.encode()) % EVERY != 0
