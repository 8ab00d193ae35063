"""The test tiers (issue #36 item 5): which tests are not unit tests, and what makes them slower.

``make test-fast`` (``pytest -m unit``) runs the unit tier: every test that is not listed here
and not marked ``slow``, ``ray`` or ``e2e`` in its own file; it stays under a minute on 2 cores.
``make test`` runs the unit tier and every test listed here (``slow`` and ``ray`` stay apart).

A test is listed, under the marker that says what it does, when it takes over ~0.25 s on this
machine's 2 cores; ``tests/conftest.py`` applies the markers at collection and refuses an entry
that names no test of its file, so the table cannot drift from the tests it describes.
"""

from __future__ import annotations

from collections import Counter

#: The markers this table applies, and what a test under each does (registered in pyproject.toml).
MARKERS = {
    "subprocess": (
        "starts a process: the CLI in a fresh interpreter, the stub server, a run killed on purpose"
    ),
    "durability": "interrupts, corrupts or resumes on purpose and checks what survives",
    "concurrency": "threads, tasks or processes racing: fan-out limits, shared work, cancellation",
    "integration": (
        "a whole strategy, command or benchmark run: loopback server, CLI, real files, large input"
    ),
    "model": (
        "loads a real model or its tokenizer: MiniLM or a BERT checkpoint through torch, ONNX, "
        "jieba's dictionary"
    ),
    "e2e": "the embedded model or a real local OpenAI-compatible server",
}

#: Markers that keep a test out of the unit tier (``slow`` and ``ray`` are not in the default
#: suite either).
NOT_UNIT = ("slow", "ray", *MARKERS)

#: The default suite's longest files, longest first (their tests' seconds summed from a
#: ``--durations=60`` run on two workers; every run prints its slowest files). ``tests/conftest.py``
#: hands them to the workers first: pytest-xdist's ``loadfile`` would otherwise hand out the files
#: with the most tests first, and these few-test, long files would start last and make a tail.
LONGEST_FILES = (
    "test_readme.py",
    "test_deadlines.py",
    "test_reported_usage.py",
    "test_cached_tokens.py",
    "test_runner.py",
    "test_corpus_edits.py",
    "test_core_install.py",
    "test_structured_report.py",
    "test_full_context_stitch.py",
    "test_chat_errors.py",
    "test_lean_client.py",
    "test_workspace.py",
    "test_architecture.py",
    "test_raptor_scalable.py",
    "test_structured.py",
    "test_docs_site.py",
    "test_browsecomp_plus_official.py",
    "test_namespace.py",
    "test_embedding_replies.py",
    "test_index_trust.py",
    "test_demo.py",
    "test_budget_trust.py",
    "test_hybrid_fit.py",
    "test_toy_plugins.py",
    "test_index_grow.py",
    "test_runner_trust.py",
    "test_shard_checksums.py",
    "test_memagent_storage.py",
    "test_import_graph.py",
    "test_structured_store.py",
    "test_cli.py",
    "test_sqlite_wal.py",
    "test_tracing.py",
    "test_dense.py",
    "test_tiers.py",
)

#: Test file (relative to tests/) -> test function -> marker; ``"*"`` marks every test of the file.
TIERS: dict[str, dict[str, str]] = {
    "test_core_install.py": {
        "test_the_core_imports_and_answers_with_bm25_without_any_extra": "subprocess",
        "test_a_feature_that_needs_an_extra_names_the_extra": "subprocess",
        "test_a_cached_dense_index_survives_a_run_without_its_extra": "subprocess",
        "test_the_core_dependencies_leave_every_extra_out_and_each_hint_names_a_real_extra": (
            "integration"
        ),
    },
    "test_import_graph.py": {
        "test_the_module_import_graph_has_no_cycle": "integration",
        "test_no_module_imports_a_higher_layer": "integration",
        "test_function_level_imports_of_our_own_modules_are_the_listed_ones": "integration",
    },
    "test_namespace.py": {
        "test_the_wheel_holds_longctx_only_and_its_command_and_declarations": "subprocess",
        "test_longctx_imports_beside_another_top_level_agents_package": "subprocess",
        "test_a_cached_reply_is_keyed_by_no_module_path_of_ours": "integration",
        "test_no_module_imports_a_folder_by_its_bare_name": "integration",
        "test_no_submodule_is_reached_as_an_attribute_of_a_package_imported_bare": "integration",
    },
    "test_toy_plugins.py": {"*": "subprocess"},
    "test_sandbox_hostile.py": {"*": "subprocess"},
    "test_sandbox_jail.py": {"*": "subprocess"},
    "test_search_agent_plugin.py": {
        "test_a_tool_loop_strategy_in_its_own_folder_answers_and_is_capped_by_its_budget": (
            "subprocess"
        ),
        "test_the_search_agent_folder_imports_only_the_plugin_surface": "integration",
    },
    "test_plugin_surface.py": {"*": "integration"},
    "test_browsecomp_plus_official.py": {"*": "integration"},
    "test_browsecomp_plus.py": {
        "test_the_cli_runs_reports_and_exports_both_settings": "integration",
        "test_ceilings_say_whether_each_strategys_reading_covers_the_evidence": "integration",
        "test_parquet_shards_give_the_same_samples_as_json_lines": "integration",
    },
    "test_search_agent_parity.py": {"*": "integration"},
    "test_agentic_benchmarks.py": {"*": "integration"},
    "test_search_agent.py": {"*": "integration"},
    "test_search_agent_runs.py": {"*": "integration"},
    "test_budget_channel.py": {
        "test_a_child_process_never_passes_a_call_budget": "subprocess",
        "test_children_running_together_share_one_call_budget": "concurrency",
        "test_a_child_process_never_passes_a_prompt_token_budget": "subprocess",
        "test_a_cost_budget_reserves_the_answer_budget_and_settles_at_the_stubs_usage": (
            "subprocess"
        ),
        "test_a_child_that_dies_holding_a_grant_leaves_its_reservation_standing": "subprocess",
    },
    "test_checkpoint_serde.py": {
        "test_a_single_runs_checkpoint_resumes_reading_only_allowed_types": "durability",
        "test_pai_resumed_after_a_budget_stop_reads_only_allowed_types": "durability",
        "test_memagents_batched_run_resumes_reading_only_allowed_types": "durability",
    },
    "test_single_checkpoint.py": {
        "test_a_tool_loop_killed_at_turn_4_of_6_resumes_at_turn_5_sending_no_answered_request": (
            "subprocess"
        ),
    },
    "test_sqlite_wal.py": {
        "test_processes_opening_one_new_reply_cache_together_all_succeed": "concurrency",
        "test_a_reply_cache_opens_while_another_process_reads_its_new_file": "concurrency",
    },
    "test_answer_budget.py": {
        "test_every_call_of_a_strategy_sends_max_tokens": "integration",
        "test_a_reasoning_model_gets_max_completion_tokens": "integration",
        "test_replies_cached_under_the_old_field_are_not_replayed": "integration",
        "test_a_user_built_chat_openai_sends_max_tokens": "integration",
        "test_a_user_built_reasoning_model_gets_max_completion_tokens": "integration",
        "test_a_budget_set_on_the_user_model_is_overridden_by_the_call": "integration",
        "test_structured_calls_and_calibration_send_max_tokens_to_a_user_model": "integration",
        "test_user_model_replies_cached_under_the_old_field_are_not_replayed": "integration",
        "test_budget_kwargs_leave_other_models_alone": "integration",
    },
    "test_architecture.py": {
        "test_every_module_imports_in_a_fresh_interpreter": "subprocess",
        "test_the_contract_modules_import_no_other_package": "subprocess",
        "test_third_party_strategy_through_an_entry_point": "subprocess",
        "test_no_module_outside_a_strategy_package_names_a_strategy": "integration",
        "test_every_answer_budget_goes_through_budget_kwargs": "integration",
        "test_the_contract_module_gathers_every_contract_module": "subprocess",
        "test_the_retrieval_package_talks_to_no_chat_server": "integration",
    },
    "test_async.py": {
        "test_the_async_fan_out_never_exceeds_concurrency_against_a_real_server": "e2e",
        "test_aanswer_under_asyncio_run_again_and_answer_inside_a_running_loop": "integration",
        "test_cancelling_aanswer_stops_issuing_calls": "concurrency",
        "test_a_cancelled_memagent_run_keeps_its_checkpoint_and_the_next_call_resumes_it": (
            "durability"
        ),
        "test_answer_drives_pai_async_when_the_model_has_an_async_client": "integration",
        "test_a_runs_connection_pool_is_its_own_and_closed_when_the_run_ends": "integration",
        "test_async_judges_give_the_sync_paths_answer_steps_and_usage": "integration",
    },
    "test_babilong.py": {
        "test_loader_reads_every_layout_and_switches_reach_the_prompt": "integration",
        "test_full_context_sends_the_official_prompt_budget_and_temperature": "integration",
        "test_export_writes_the_csv_the_official_collect_results_reads": "integration",
        "test_the_documented_cli_chain_with_loader_options_runs_reports_and_exports": "integration",
        "test_score_is_accuracy_with_the_official_table": "integration",
    },
    "test_babilong_gen.py": {
        "test_an_empty_babi_file_has_no_samples_and_generates_an_empty_file": "integration",
        "test_placement_keeps_every_statement_and_sentence_in_order": "integration",
        "test_generated_haystacks_have_the_length_the_facts_in_order_and_load": "integration",
        "test_generation_is_seeded": "integration",
    },
    "test_batch_contract.py": {
        "test_the_toy_runs_checkpoint_covers_what_a_budget_cannot": "durability",
    },
    "test_benchmarks_loaders.py": {
        "test_lveval_flat_and_nested_files_keywords_and_scoring": "integration",
    },
    "test_bm25.py": {
        "test_tokenize_chinese_uses_jieba_words_not_characters": "model",
        "test_bm25s_and_rank_bm25_agree_on_top_k": "integration",
    },
    "test_bm25_build_memory.py": {
        "test_counts_spilled_in_many_blocks_equal_counts_made_in_one": "integration",
        "test_a_build_scores_bit_identically_to_bm25s_indexing_the_token_lists": "integration",
        "test_a_build_holds_its_arrays_and_one_block_not_the_tokens": "integration",
        "test_a_build_with_a_work_folder_keeps_the_score_matrix_on_disk": "integration",
        "test_bm25s_is_loaded_without_numba": "subprocess",
    },
    "test_agent_doubles.py": {
        "test_the_openai_client_parses_the_stubs_tool_calls": "integration",
        "test_the_openai_client_streams_the_stubs_tool_call_deltas": "integration",
        "test_our_chat_model_parses_the_stubs_tool_calls_whole_and_streamed": "integration",
        "test_the_stub_counts_schemas_and_tool_call_arguments_as_prompt": "integration",
    },
    "test_chat_call.py": {
        "test_chat_sends_tools_choice_and_budget_and_returns_the_tool_calls": "integration",
        "test_a_prompt_budget_only_the_schemas_pass_is_refused_before_sending": "integration",
        "test_counted_prompt_tokens_are_what_the_stub_read_schemas_and_arguments_included": (
            "integration"
        ),
    },
    "test_tool_loop.py": {
        "test_a_tool_loop_at_the_stub_never_passes_a_prompt_budget_and_counts_what_it_read": (
            "integration"
        ),
    },
    "test_tool_events.py": {
        "test_the_sse_app_streams_the_tool_events_in_order": "integration",
    },
    "test_budget_stop.py": {"*": "integration"},
    "test_budget_trust.py": {
        "test_estimate_without_a_model_is_the_plan_the_refusal_gives": "integration",
        "test_pai_stopped_by_its_budget_sends_nothing_after_and_counts_all_it_sent": "concurrency",
        "test_a_resumed_answer_counts_the_calls_it_sent_and_keeps_the_runs_total_apart": (
            "durability"
        ),
        "test_result_rows_of_a_stopped_then_resumed_unit_add_up_to_the_requests_sent": "durability",
        "test_memagent_is_refused_before_any_call_by_a_budget_its_plan_cannot_fit": "integration",
        "test_a_checkpoint_that_covers_the_difference_lets_the_rest_run": "durability",
    },
    "test_budgets.py": {
        "test_cli_refuses_a_plan_over_max_calls_on_one_line": "integration",
        "test_cli_stops_memagent_at_max_tokens_and_says_so": "integration",
        "test_cli_budget_errors_are_one_line": "integration",
        "test_memagent_plan_follows_the_readme_formula": "integration",
        "test_run_rows_keep_stopped_and_a_rerun_answers_them_again": "integration",
        "test_self_route_stops_when_its_fallback_reaches_the_budget": "integration",
        "test_the_budget_bounds_all_questions_together": "integration",
    },
    "test_cached_tokens.py": {
        "test_a_20_question_full_context_run_reads_the_corpus_from_cache_after_the_first_call": (
            "integration"
        ),
        "test_each_vendors_name_for_cached_tokens_reaches_the_answers_usage": "concurrency",
        "test_the_embedded_model_reports_the_prefix_it_kept": "e2e",
        "test_the_async_lean_path_reads_cached_tokens_too": "integration",
        "test_the_report_prices_cached_tokens_at_their_rate_and_shows_the_cost_without_cache": (
            "integration"
        ),
        "test_a_streamed_answer_reports_the_cached_tokens_a_whole_reply_does": "integration",
        "test_workspace_compare_prices_cached_tokens_as_the_report_does": "integration",
        "test_the_budget_guard_spends_what_the_report_charges": "integration",
        "test_the_report_names_the_strategies_the_prompt_cache_moves_onto_or_off_the_frontier": (
            "integration"
        ),
    },
    "test_ceilings.py": {
        "test_cli_prints_every_strategy_with_the_upper_bound_note": "integration",
        "test_load_tokenizer_uses_the_librarys_offline_tokenizers": "integration",
        "test_rag_ceiling_agrees_with_the_synth_reports_evidence_recall": "integration",
        "test_records_cover_exactly_the_evidence_documents": "integration",
    },
    "test_chat_errors.py": {
        "test_every_failure_after_retries_is_a_chat_model_error": "subprocess",
        "test_malformed_replies_are_retried_like_server_errors": "subprocess",
        "test_answer_raises_the_chat_model_error_too": "subprocess",
        "test_a_plain_chat_openai_error_is_mapped_with_its_status": "subprocess",
        "test_async_runs_map_failures_the_same_through_their_own_pool": "subprocess",
        "test_async_timeout_is_a_chat_model_error_naming_no_status": "subprocess",
        "test_malformed_replies_are_retried_when_the_model_leaves_max_retries_unset": "subprocess",
    },
    "test_chunking.py": {
        "test_a_text_encoded_a_segment_at_a_time_has_the_same_tokens_and_chunks": "integration",
    },
    "test_cli.py": {
        "test_index_with_tokens_and_dense": "integration",
        "test_answer_prints_answer_evidence_and_usage": "integration",
        "test_answer_json_output": "integration",
        "test_console_script_is_installed": "subprocess",
    },
    "test_cli_errors.py": {
        "test_duplicate_strategies_on_the_command_line_run_once": "subprocess",
    },
    "test_cli_frictions.py": {
        "test_report_without_plots_does_not_promise_plots": "subprocess",
    },
    "test_cli_startup.py": {
        "test_help_and_argument_errors_load_no_engine": "subprocess",
        "test_import_agents_loads_no_engine_until_a_name_is_used": "subprocess",
        "test_the_answer_function_loads_the_retrieval_engines_on_first_use": "subprocess",
        "test_a_start_loads_a_few_modules": "subprocess",
        "test_a_plugin_strategy_is_offered_by_its_entry_point_name_without_loading_it": (
            "subprocess"
        ),
    },
    "test_code_sim.py": {
        "test_code_sim_equals_fuzzywuzzy_without_levenshtein_on_many_pairs": "integration",
    },
    "test_compare_pairing.py": {
        "test_a_question_id_reused_for_another_question_is_not_paired": "integration",
        "test_identical_questions_pair_fully_and_questions_of_one_run_only_are_counted": (
            "integration"
        ),
        "test_the_same_questions_over_an_edited_corpus_are_not_paired": "integration",
    },
    "test_corpus.py": {
        "test_from_path_reads_every_supported_type": "integration",
        "test_from_documents_accepts_llama_index_and_langchain_documents": "integration",
    },
    "test_corpus_edits.py": {
        "test_dense_index_of_an_edited_corpus_embeds_only_the_update_and_skips_deleted_chunks": (
            "model"
        ),
        "test_an_edited_corpus_tokenizes_only_the_updated_documents_and_ranks_as_a_rebuild": (
            "integration"
        ),
        "test_after_one_percent_edits_and_deletions_every_synthetic_question_ranks_as_a_rebuild": (
            "integration"
        ),
        "test_deletions_past_the_policy_are_folded_into_one_segment_that_scores_as_a_fresh_build": (
            "integration"
        ),
        "test_ten_thousand_documents_with_ties_and_one_percent_removed": "integration",
        "test_a_killed_update_leaves_the_previous_index_usable": "subprocess",
        "test_deleted_and_replaced_text_never_reaches_a_prompt": "integration",
        "test_scores_over_live_chunks_are_bit_identical_to_bm25s_over_them_alone": "integration",
    },
    "test_cost_bounds_hold.py": {
        "test_a_real_run_lies_within_the_plans_bounds": "integration",
        "test_a_budget_of_exactly_what_a_run_sends_is_not_refused": "integration",
    },
    "test_cost_contract.py": {
        "test_the_typical_cost_lies_within_the_plans_bounds": "integration",
    },
    "test_deadlines.py": {"*": "integration"},
    "test_demo.py": {
        "test_demo_says_what_it_will_do_then_compares_every_strategy": "e2e",
        "test_demo_can_run_every_strategy": "e2e",
        "test_the_demo_report_names_no_winner_on_its_few_scored_questions_and_says_why": "e2e",
    },
    "test_dense.py": {
        "test_faiss_round_trip": "model",
        "test_minilm_is_found_offline_and_embeds_normalized_vectors": "model",
        "test_embedders_of_one_model_share_the_loaded_model": "model",
        "test_dense_retriever_finds_the_semantically_related_chunk": "model",
        "test_overlong_chunks_warn_about_the_256_word_piece_limit": "model",
        "test_contriever_mean_pooling_on_a_local_bert_checkpoint": "model",
        "test_contriever_retriever_through_the_registry": "integration",
        "test_missing_contriever_checkpoint_offline_gives_a_clear_error": "model",
    },
    "test_e2e.py": {
        "test_rag_on_the_embedded_model_finds_the_planted_fact": "e2e",
        "test_rag_through_an_openai_compatible_server": "integration",
        "test_a_server_that_does_not_answer_is_named": "integration",
    },
    "test_e2e_self_ask_route.py": {
        "test_self_route_answers_from_rag_on_the_embedded_model": "e2e",
    },
    "test_embedding_backends.py": {
        "test_torch_bf16_vectors_are_float32_unit_length_and_agree_with_torch": "model",
        "test_onnx_int8_is_exported_once_offline_and_agrees_with_torch": "model",
        "test_the_backend_is_part_of_the_index_cache_key": "model",
        "test_the_cli_passes_the_embedding_backend_to_the_dense_retriever": "model",
    },
    "test_errors.py": {
        "test_what_a_user_gets_wrong_raises_a_longctx_error_of_its_kind": "integration",
    },
    "test_export.py": {
        "test_export_writes_the_official_layout": "integration",
    },
    "test_fit_chunks.py": {
        "test_default_contriever_chunks_fit_its_512_tokens": "model",
        "test_fitted_and_unfitted_dense_indexes_have_their_own_cache_keys": "model",
        "test_default_dense_chunks_fit_minilm": "integration",
        "test_default_openai_chunks_fit_the_servers_input": "integration",
        "test_unfitted_chunks_are_named_before_embedding_with_what_is_cut": "integration",
    },
    "test_full_context_stitch.py": {
        "test_the_stitched_cut_equals_cutting_the_whole_prompts_tokens": "integration",
        "test_the_stitched_tokens_are_the_whole_prompts_tokens": "integration",
        "test_contexts_ending_in_long_runs_stitch_exactly_or_take_the_exact_path": "integration",
        "test_later_questions_tokenize_only_a_short_stretch_and_prepare_once_when_concurrent": (
            "concurrency"
        ),
        "test_the_stitched_cut_equals_the_exact_cut_with_the_embedded_models_bpe": "e2e",
    },
    "test_grow_strategies.py": {
        "test_memagent_continues_a_finished_run_over_the_appended_documents_only": "integration",
        "test_structured_extracts_only_the_documents_added_to_the_corpus": "integration",
    },
    "test_heap.py": {
        "test_cyclic_garbage_from_before_the_run_is_collected_after_it": "integration",
        "test_a_process_that_froze_its_heap_itself_is_left_frozen": "integration",
        "test_a_run_freezes_the_heap_while_it_lasts_and_unfreezes_it_after": "integration",
        "test_nested_and_concurrent_runs_unfreeze_only_when_the_last_ends": "concurrency",
        "test_the_decorator_covers_coroutines_and_errors": "integration",
    },
    "test_hipporag.py": {
        "test_a_build_killed_in_the_openie_map_resumes_without_asking_a_finished_call": (
            "durability"
        ),
        "test_answers_through_answer_with_index_usage_on_the_first_only": "model",
        "test_personalized_pagerank_equals_the_hand_computed_one": "integration",
        "test_the_plan_gives_the_openie_pass_as_index_time_and_a_run_counts_what_it_planned": (
            "model"
        ),
    },
    "test_hipporag_growth.py": {
        "test_growth_embeds_and_extracts_only_new_passages_and_edits_leave_no_trace": "integration",
        "test_a_rescanned_folder_extracts_only_the_edited_file_and_forgets_the_deleted_one": (
            "integration"
        ),
    },
    "test_hipporag_requests.py": {
        "test_the_strategy_sends_the_official_openie_requests": "integration",
        "test_openie_calls_stay_within_concurrency": "concurrency",
    },
    "test_html_report.py": {
        "test_report_html_is_written_beside_the_tables_and_is_self_contained": "integration",
        "test_report_opens_in_headless_chromium_with_a_drill_down": "subprocess",
        "test_the_score_intervals_are_in_view_at_1400_px_without_scrolling": "subprocess",
        "test_an_interrupted_run_lists_every_strategy_and_question_and_names_no_winner": (
            "durability"
        ),
        "test_cli_report_takes_prices_and_a_bad_file_is_a_one_line_error": "integration",
        "test_costs_use_the_user_price_table": "integration",
        "test_drill_down_shows_each_strategys_answer_score_cost_evidence_and_steps": "integration",
        "test_every_string_from_the_data_is_escaped": "integration",
        "test_memagent_shows_the_memory_after_each_chunk": "integration",
        "test_pai_shows_properties_kept_chunks_and_sub_answers": "integration",
        "test_scores_in_the_page_are_the_scorers_per_sample_scores": "integration",
        "test_self_ask_shows_its_follow_ups_and_transcript": "integration",
        "test_self_route_shows_route_and_reason": "integration",
        "test_unknown_model_price_is_n_a_not_zero": "integration",
        "test_winner_per_metric_in_the_page": "integration",
    },
    "test_hybrid.py": {
        "test_hybrid_index_keeps_both_components_ranks_and_reuses_the_dense_index": "model",
        "test_strategies_take_hybrid_and_every_evidence_carries_its_components": "integration",
    },
    "test_hybrid_fit.py": {
        "test_hybrid_over_chunks_longer_than_the_embedder_reads_indexes_the_same_fitted_chunks": (
            "model"
        ),
        "test_answer_with_hybrid_over_long_chunks_returns_the_fitted_chunks_as_evidence": "model",
        "test_a_grown_edited_and_compacted_hybrid_keeps_its_components_aligned": "model",
    },
    "test_index_cache.py": {
        "test_interrupted_dense_build_resumes_from_finished_shards": "durability",
    },
    "test_index_kill.py": {
        "test_a_tree_built_carries_its_seconds_and_one_reused_from_disk_or_memory_none": (
            "integration"
        ),
        "test_a_hipporag_build_killed_in_openie_and_in_writing_resumes_asking_no_answered_call": (
            "subprocess"
        ),
        "test_corrupt_hipporag_files_are_named_and_rebuilt_a_torn_openie_log_asks_its_torn_line": (
            "durability"
        ),
    },
    "test_doc_outputs.py": {
        "test_a_quoted_output_is_what_the_command_prints": "model",
    },
    "test_docs_site.py": {
        "test_the_site_builds_strict_offline": "subprocess",
    },
    "test_duplicates.py": {
        "test_rag_spends_no_slot_on_a_copy": "integration",
        "test_the_cli_index_drops_copies_unless_told_to_keep_them": "integration",
    },
    "test_huge_line.py": {
        "test_hashing_a_huge_document_makes_no_copy_of_its_text": "subprocess",
    },
    "test_index_model_identity.py": {
        "test_the_keys_name_the_model_and_its_settings_not_its_address": "integration",
        "test_hipporag_on_another_port_asks_no_index_call_again": "integration",
    },
    "test_index_checksums.py": {
        "test_a_same_size_corruption_is_named_set_aside_and_rebuilt": "durability",
        "test_an_index_written_before_checksums_gets_them_without_a_rebuild": "durability",
    },
    "test_index_compact.py": {
        "test_after_k_plus_one_growths_the_index_is_one_segment_that_scores_as_a_fresh_build": (
            "durability"
        ),
        "test_segments_never_exceed_the_policy_over_many_growths": "integration",
        "test_a_kill_in_compaction_leaves_the_old_segments_loadable_and_the_next_growth_compacts": (
            "durability"
        ),
        "test_a_killed_compaction_leaves_the_old_segments_and_its_leftovers_are_cleared": (
            "subprocess"
        ),
        "test_dense_segments_are_compacted_without_embedding_again": "integration",
        "test_compaction_is_not_repeated_on_loads": "integration",
    },
    "test_index_grow.py": {
        "test_bm25_index_of_a_grown_corpus_adds_one_segment_and_ranks_as_a_rebuild": "integration",
        "test_dense_index_of_a_grown_corpus_embeds_only_the_new_document_and_ranks_as_a_rebuild": (
            "integration"
        ),
        "test_a_damaged_segment_is_caught_by_its_checksum_and_rebuilt": "durability",
        "test_bm25_index_grows_again_from_a_grown_one": "integration",
    },
    "test_cost_figures.py": {
        "test_cli_refuses_an_unknown_price_key_on_one_line": "integration",
        "test_answer_stops_at_max_cost_priced_by_prices_on_a_loopback_server": "integration",
        "test_a_cost_of_zero_or_one_is_no_right_or_wrong_answer": "integration",
        "test_a_runs_price_table_is_kept_in_its_folder_for_its_report": "integration",
    },
    "test_index_seconds_once.py": {
        "test_a_build_waited_for_is_counted_once_as_when_the_questions_are_asked_together": (
            "concurrency"
        ),
    },
    "test_index_strategies_trust.py": {
        "test_a_flipped_byte_in_a_stored_triple_is_named_and_asked_again": "durability",
        "test_replies_that_ignore_max_tokens_are_cut_with_a_warning_and_the_build_says_so": (
            "integration"
        ),
        "test_unreadable_extraction_replies_mark_the_build_degraded_with_a_warning": "integration",
        "test_every_missing_extra_is_named_at_once_before_any_request": "integration",
        "test_a_budget_counts_the_graphs_openie_calls_until_it_is_cached": "model",
        "test_raptors_plan_counts_its_first_summary_and_bounds_its_calls_by_the_real_leaves": (
            "integration"
        ),
    },
    "test_index_trust.py": {
        "test_concurrent_index_commands_build_once": "subprocess",
        "test_a_damaged_dense_index_is_named_moved_aside_and_rebuilt": "durability",
        "test_a_corrupt_shard_of_an_interrupted_build_is_re_embedded": "durability",
    },
    "test_inject_once.py": {
        "test_rag_builds_its_index_once_per_context_when_injected_once": "integration",
        "test_report_shows_cost_per_context_and_per_question": "integration",
    },
    "test_interop.py": {
        "test_corpus_as_retriever_in_an_lcel_chain": "integration",
        "test_answer_as_a_runnable_in_a_chain_sync_and_async": "integration",
        "test_answer_as_a_tool_in_the_readmes_agent": "integration",
        "test_index_as_llama_index_retriever": "model",
    },
    "test_jsonsafe.py": {
        "test_shared_sub_values_are_cut_after_max_values_not_expanded": "integration",
    },
    "test_judges.py": {"*": "integration"},
    "test_embedding_replies.py": {"*": "integration"},
    "test_lean_client.py": {
        "test_lean_path_sends_the_same_body_and_returns_the_same_message": "integration",
        "test_reasoning_models_get_the_sdks_body_budget_included": "integration",
        "test_extra_body_reaches_the_body_as_with_the_sdk": "integration",
        "test_tool_calls_parse_the_same": "subprocess",
        "test_streaming_keeps_chatopenai_path": "integration",
    },
    "test_loong_corpusqa_protocol.py": {
        "test_generation_runs_at_the_official_temperature_and_input_budget": "integration",
    },
    "test_memagent.py": {
        "test_call_count_is_chunks_plus_one": "integration",
        "test_resume_after_the_process_is_killed": "subprocess",
        "test_many_questions_advance_together_with_independent_memories": "concurrency",
        "test_resume_after_a_crash_reads_no_chunk_twice": "durability",
    },
    "test_memagent_fidelity.py": {
        "test_paper_preset_on_ruler_hqa_exports_and_reports_the_official_score_of_whole_replies": (
            "integration"
        ),
        "test_a_model_with_another_extra_body_makes_its_own_calls": "integration",
        "test_every_setting_that_changes_a_request_changes_the_key": "integration",
        "test_memagent_on_longbench_v2_sends_the_benchmarks_temperature_without_its_own_top_p": (
            "integration"
        ),
        "test_what_changes_no_request_keeps_the_key": "integration",
    },
    "test_memagent_official.py": {
        "test_paper_preset_on_longbench_hotpotqa_is_scored_on_the_extracted_answer": "integration",
        "test_benchmark_items_are_streamed_as_the_official_loop_cuts_them": "integration",
    },
    "test_memagent_storage.py": {
        "test_a_corrupt_checkpoint_database_restarts_only_its_run": "durability",
        "test_a_finished_run_keeps_only_its_final_checkpoint": "integration",
        "test_a_second_identical_run_is_refused_naming_the_holder": "subprocess",
        "test_a_killed_run_resumes_in_its_own_folder_and_is_pruned": "subprocess",
        "test_a_corrupt_trace_never_aborts_the_run": "durability",
        "test_each_run_key_has_its_own_databases": "integration",
    },
    "test_memoryagentbench.py": {
        "test_full_context_run_sends_the_long_context_agents_message": "integration",
        "test_rag_run_sends_the_bm25_agents_message": "integration",
        "test_ten_thousand_questions_over_one_context_load_share_one_corpus_and_score": (
            "integration"
        ),
        "test_requests_are_the_official_agents_requests": "integration",
    },
    "test_metrics_official.py": {
        "test_qa_f1_zh": "model",
        "test_rouge_l_zh_tokenises_with_jieba": "model",
        "test_lveval_qa_f1_gated_chinese": "model",
        "test_lveval_rouge_blacklist_drops_function_words": "model",
    },
    "test_openai_chat.py": {
        "test_importing_agents_loads_no_langchain_openai_until_an_openai_model_is_made": (
            "subprocess"
        ),
    },
    "test_own_corpus.py": {
        "test_pdfs_and_a_questions_file_run_through_rag_memagent_and_pai_with_one_command": (
            "subprocess"
        ),
        "test_own_corpus_report_opens_in_headless_chromium": "subprocess",
        "test_compare_prints_the_paired_table_of_two_runs_of_the_same_questions": "integration",
        "test_the_corpus_is_shared_by_every_question": "integration",
    },
    "test_build_progress.py": {
        "test_hipporag_reports_each_passages_openie_and_the_embedding_before_its_first_step": (
            "integration"
        ),
    },
    "test_report_sections.py": {
        "test_the_page_has_babilongs_task_by_length_tables_with_the_scorers_values": "integration",
        "test_the_page_has_the_cost_per_context_with_a_legend_and_a_usd_plot_when_priced": (
            "integration"
        ),
    },
    "test_variants.py": {
        "test_two_variants_of_rag_run_resume_and_report_as_two_columns": "integration",
        "test_one_answer_refuses_a_variant_before_any_call": "integration",
    },
    "test_pai.py": {
        "test_exhaustive_judge_calls_are_properties_times_chunks": "integration",
        "test_judge_fan_out_respects_max_concurrency": "concurrency",
        "test_malformed_verdicts_are_retried_then_recorded_and_dropped": "integration",
        "test_output_is_the_papers_cot_and_the_instruction_shapes_the_conclusion": "integration",
    },
    "test_plots.py": {
        "test_labels_of_coincident_points_do_not_overlap": "integration",
        "test_legend_sits_outside_the_axes": "integration",
        "test_accuracy_vs_length_needs_two_buckets": "integration",
    },
    "test_plugin_ceiling_and_plan.py": {
        "test_a_plugin_strategy_gets_a_ceiling_row_after_the_built_in_ones": "integration",
    },
    "test_plugin_presentation.py": {
        "test_a_plugin_strategy_gets_its_report_section_colour_and_demo_place": "integration",
    },
    "test_probe_memory.py": {
        "test_a_server_without_tokenize_routes_is_probed_once_until_the_answer_expires": (
            "integration"
        ),
        "test_the_answer_is_kept_per_model_name_and_api_key_never_the_key_itself": "integration",
        "test_an_explicit_server_tokenizer_probes_a_server_remembered_without_routes": (
            "integration"
        ),
        "test_a_transient_failure_is_not_remembered_as_no_route": "integration",
        "test_a_remembered_route_costs_one_request_and_a_changed_server_is_probed_again": (
            "integration"
        ),
        "test_an_entry_naming_a_dialect_this_version_lacks_is_probed_again": "integration",
    },
    "test_prompt_sharing.py": {
        "test_the_declaration_matches_the_requests_two_questions_send": "concurrency",
        "test_pai_chunk_first_judge_prompts_let_a_cache_serve_each_chunk_to_other_sub_questions": (
            "concurrency"
        ),
        "test_a_run_of_several_strategies_runs_a_strategys_questions_over_a_corpus_back_to_back": (
            "concurrency"
        ),
    },
    "test_protocol.py": {"*": "integration"},
    "test_protocol_settings.py": {
        "test_longbench_v2_default_rag_puts_chunks_in_document_order": "integration",
        "test_longbench_v2_cot_setting_sends_both_official_calls_and_scores_the_second": (
            "integration"
        ),
        "test_samsum_final_calls_stop_at_a_newline_and_other_datasets_send_no_stop": "integration",
    },
    "test_queued_seconds.py": {"*": "concurrency"},
    "test_raptor.py": {
        "test_a_small_corpus_stops_at_the_leaves_and_a_corrupted_tree_file_is_named_and_rebuilt": (
            "durability"
        ),
        "test_leaves_equal_the_official_split_text": "integration",
    },
    "test_raptor_scalable.py": {
        "test_the_mixture_is_fitted_on_the_sample_and_scores_every_point": "integration",
        "test_each_cluster_carries_its_members_positions_in_the_reduction_it_was_found_in": (
            "integration"
        ),
        "test_reusing_the_positions_splits_an_over_long_cluster_with_no_new_reduction": (
            "integration"
        ),
        "test_over_long_clusters_clustered_again_in_worker_processes_give_the_same_clusters": (
            "concurrency"
        ),
    },
    "test_stub_content.py": {
        "test_the_stub_serves_embeddings_to_the_openai_embedder_and_content_replies_to_chat": (
            "subprocess"
        ),
    },
    "test_synonymy_knn.py": {
        "test_ivf_searches_exactly_below_its_size_and_finds_most_neighbours_above_it": (
            "integration"
        ),
    },
    "test_raptor_clustering.py": {
        "test_bic_search_range_of_one_and_two_points": "integration",
        "test_a_mixture_of_collapsed_points_is_fitted_in_float64_where_float32_fails": (
            "integration"
        ),
        "test_a_count_no_mixture_fits_is_skipped_and_the_fit_falls_back_to_fewer": "integration",
    },
    "test_readme.py": {
        "test_readme_block_runs": "integration",
    },
    "test_report_once.py": {
        "test_llm_judge_is_called_once_per_prediction": "integration",
    },
    "test_rerank.py": {
        "test_a_local_cross_encoder_reranks_by_its_own_scores": "model",
        "test_rerank_requests_carry_query_candidates_and_top_n_and_keep_the_servers_best": (
            "integration"
        ),
        "test_a_server_error_is_retried_and_counted": "integration",
        "test_a_server_that_keeps_failing_fails_the_answer_clearly_after_its_retries": (
            "integration"
        ),
        "test_a_client_error_is_not_retried": "integration",
        "test_a_failed_rerank_fails_its_row_only_and_the_next_run_answers_it": "integration",
        "test_pais_prefilter_reranks_each_sub_questions_candidates": "integration",
    },
    "test_rerank_replies.py": {
        "test_a_malformed_reply_is_retried_then_fails_the_answer_before_any_model_call": (
            "integration"
        ),
        "test_more_results_than_asked_keep_the_best_top_n": "integration",
        "test_the_command_line_names_the_server_on_one_line": "integration",
    },
    "test_rerank_costs.py": {
        "test_a_budget_stops_a_rerank_call_before_its_request": "integration",
        "test_rerank_tokens_count_against_the_token_budget": "integration",
        "test_the_report_shows_rerank_calls_tokens_and_their_cost_beside_the_model_calls": (
            "integration"
        ),
        "test_the_rerank_calls_a_run_sends_lie_within_its_plan": "integration",
    },
    "test_reported_usage.py": {
        "test_a_hostile_usage_count_keeps_the_answer_and_is_counted_as_ours_with_a_warning": (
            "integration"
        ),
        "test_a_cost_budget_stops_pai_at_the_same_call_for_a_server_that_reports_absurd_usage": (
            "integration"
        ),
        "test_a_rerank_reply_with_an_absurd_usage_keeps_its_ranking_and_counts_no_tokens": (
            "integration"
        ),
        "test_longctx_answer_prints_the_answer_of_a_server_with_unparsable_usage": "integration",
        "test_rows_of_a_server_with_absurd_usage_are_counted_by_the_report_and_not_paid_again": (
            "integration"
        ),
    },
    "test_result_rows.py": {
        "test_hostile_results_never_stop_a_run_and_the_rerun_finishes": "integration",
        "test_answer_json_is_strict_json_whatever_the_strategy_returns": "subprocess",
        "test_a_corrupt_manifest_is_set_aside_and_rebuilt": "durability",
        "test_a_retry_over_a_served_model_asks_the_server_again": "subprocess",
    },
    "test_resume_settings.py": {
        "test_a_model_with_other_request_settings_answers_again_at_the_server": "concurrency",
        "test_a_changed_option_or_model_answers_again": "integration",
        "test_the_plan_counts_what_the_run_will_answer": "integration",
    },
    "test_retrieval_top_k.py": {
        "test_dense_retrievers_return_min_of_top_k_and_chunks": "integration",
        "test_a_hotpotqa_item_gets_7_chunks_for_rag_and_5_contexts_for_self_ask": "integration",
    },
    "test_row_schema.py": {
        "test_self_referencing_and_shared_values_write_small_and_a_mapping_answer_fails_its_row": (
            "integration"
        ),
        "test_absurd_usage_is_refused_naming_file_and_line_and_the_report_builds": "integration",
        "test_a_whole_last_line_that_is_not_a_usable_row_is_named_not_called_torn": "durability",
        "test_an_ok_row_whose_prediction_is_not_text_is_refused_and_answered_again": "integration",
    },
    "test_ruler_hqa.py": {
        "test_full_context_sends_memagents_prompt_budget_and_temperature": "integration",
        "test_the_documented_cli_chain_runs_reports_and_exports": "integration",
        "test_memagent_sends_the_recurrent_loops_problem_budgets_and_final_prompt": "integration",
    },
    "test_run_plan.py": {
        "test_the_calibration_is_measured_once_and_then_read_from_the_cache": "integration",
        "test_the_question_is_asked_only_on_a_terminal": "subprocess",
        "test_run_prints_its_plan": "subprocess",
        "test_the_run_bar_shows_the_calls_and_the_step_of_a_long_answer": "subprocess",
    },
    "test_runner.py": {
        "test_report_tables_and_plots": "concurrency",
        "test_llm_cache_replays_a_rerun_at_no_cost": "subprocess",
        "test_killed_run_resumes_to_the_same_rows_as_an_uninterrupted_one": "subprocess",
        "test_faults_are_survived_and_accounted_for": "subprocess",
        "test_failures_are_rows_and_a_rerun_retries_only_them": "integration",
    },
    "test_runner_trust.py": {
        "test_the_lock_of_a_killed_run_is_taken_over": "subprocess",
        "test_racing_manifest_updates_are_all_recorded": "subprocess",
        "test_a_torn_last_line_does_not_swallow_the_next_row": "durability",
    },
    "test_scale.py": {
        "test_a_long_memagent_run_keeps_few_checkpoints_while_it_runs": "integration",
        "test_a_run_pruned_while_running_resumes_where_it_stopped": "durability",
        "test_truncating_a_huge_prompt_tokenizes_a_bit_more_than_it_keeps_and_equals_cutting_all": (
            "integration"
        ),
    },
    "test_secrets.py": {
        "test_a_provider_error_echoing_the_headers_reaches_no_file_and_no_output": "integration",
        "test_an_embeddings_error_with_an_option_key_reaches_no_file_and_no_output": "integration",
        "test_credentials_in_the_base_url_of_a_successful_run_reach_no_file": "integration",
    },
    "test_self_ask.py": {
        "test_recorded_requests_carry_the_stops_and_budget": "integration",
        "test_hotpotqa_item_scores_the_parsed_answer": "integration",
        "test_default_cap_is_five_and_configurable_beyond_the_recursion_default": "integration",
    },
    "test_self_route.py": {
        "test_memagent_fallback_is_checkpointed_and_replays": "integration",
    },
    "test_self_route_budget_stop.py": {
        "test_a_checkpointed_run_stopped_in_its_leg_resumes_inside_the_leg": "durability",
        "test_a_stop_in_the_memagent_leg_keeps_the_chunks_it_read": "integration",
        "test_a_stop_in_a_tool_loop_leg_keeps_its_turns_and_finishes_with_its_final_node": (
            "integration"
        ),
    },
    "test_shard_checksums.py": {
        "test_shards_written_from_vectors_embedded_elsewhere_are_resumed_from": "model",
        "test_shard_records_name_what_is_wrong": "model",
        "test_a_resumed_build_re_embeds_a_shard_without_a_sound_checksum": "durability",
        "test_a_shard_of_another_shard_size_with_as_many_rows_is_not_reused": "durability",
    },
    "test_stats.py": {
        "test_interval_on_10000_questions_with_ties": "integration",
        "test_tied_graded_scores_enumerate_only_the_non_zero_differences": "integration",
        "test_sign_flip_on_one_question_and_on_10000_mostly_tied_questions_past_the_exact_limit": (
            "integration"
        ),
        "test_mcnemar_detectable_difference_is_where_the_exact_test_reaches_80_percent_power": (
            "integration"
        ),
    },
    "test_streaming.py": {
        "test_memagent_memory_per_chunk_arrives_over_sse_as_each_chunk_is_read": "concurrency",
        "test_a_client_that_disconnects_mid_stream_stops_the_model_calls": "concurrency",
        "test_leaving_a_sync_stream_early_stops_the_run": "integration",
        "test_streaming_true_turns_token_events_on_for_a_spec_string": "integration",
        "test_streaming_true_against_a_server_that_does_not_stream_is_a_model_error_naming_it": (
            "integration"
        ),
        "test_closing_the_async_stream_early_stops_the_run": "integration",
        "test_rag_steps_arrive_over_sse_in_order_then_the_answer": "concurrency",
    },
    "test_structured.py": {
        "test_true_records_give_the_sql_truth_on_every_template_128k": "concurrency",
        "test_every_query_template_on_both_domains": "concurrency",
        "test_extraction_calls_in_flight_stay_within_concurrency_on_a_real_server": "e2e",
        "test_a_failing_extraction_raises_the_chat_model_error_itself_on_the_async_path": (
            "subprocess"
        ),
        "test_concurrent_writers_never_leave_a_torn_line": "durability",
        "test_malformed_extraction_is_retried_then_recorded": "integration",
        "test_the_planner_sees_the_tables_already_filled_and_naming_one_again_reads_nothing": (
            "integration"
        ),
        "test_unusable_log_line_is_skipped_and_extracted_again": "integration",
    },
    "test_structured_flight.py": {
        "test_without_the_cache_overlapping_questions_still_share": "concurrency",
        "test_a_malformed_leader_is_shared_as_degraded_unless_retry_degraded": "concurrency",
        "test_with_retry_degraded_a_malformed_leader_is_not_reused_as_empty_records": "concurrency",
        "test_a_leader_that_raises_is_retried_by_its_waiters": "concurrency",
        "test_processes_extract_each_document_once": "concurrency",
        "test_stub_server_sees_one_extraction_per_document": "subprocess",
        "test_eight_async_questions_extract_each_document_once": "integration",
        "test_threads_and_asyncio_tasks_share_one_flight": "concurrency",
    },
    "test_structured_heap_limit.py": {
        "test_after_a_structured_query_another_connection_may_use_more_than_the_limit": (
            "subprocess"
        ),
        "test_a_hostile_sort_still_ends_at_the_heap_limit_and_the_limits_come_back": "integration",
        "test_where_ctypes_reaches_no_library_the_pragmas_lower_the_limits_and_a_warning_says_so": (
            "integration"
        ),
    },
    "test_structured_report.py": {
        "test_structured_answers_every_question_and_the_report_shows_ceilings": "integration",
        "test_longctx_run_structured_offline_against_a_stub_server": "subprocess",
    },
    "test_structured_sql_limits.py": {
        "test_a_long_query_is_stopped_by_the_watchdog_within_twice_the_limit": "integration",
        "test_cli_answer_with_the_structured_strategy_prints_its_evidence": "integration",
        "test_a_run_whose_sql_returns_a_blob_an_infinity_and_a_huge_string_writes_every_row": (
            "integration"
        ),
    },
    "test_structured_store.py": {
        "test_concurrent_writers_in_threads_and_processes_lose_no_schema": "concurrency",
        "test_a_writer_killed_before_its_rename_leaves_the_store_as_it_was": "concurrency",
    },
    "test_synth.py": {
        "test_corpus_size_is_within_5_percent_of_target": "integration",
        "test_same_seed_gives_identical_files_and_other_seed_differs": "integration",
        "test_needle_depth_without_cfi_or_kpr": "integration",
        "test_cli_synth": "integration",
        "test_evidence_documents_contain_the_values_used": "integration",
        "test_sql_answers_agree_with_independent_python": "integration",
    },
    "test_synth_benchmark.py": {
        "test_runner_and_report_on_the_synthetic_benchmark": "integration",
        "test_runner_streams_questions_sharing_a_corpus_in_one_memagent_pass": "integration",
    },
    "test_tiers.py": {
        "test_the_unit_tier_of_a_file_is_what_the_table_does_not_list": "subprocess",
        "test_every_entry_names_a_test_of_its_file_under_a_registered_marker": "integration",
    },
    "test_tokenizers.py": {
        "test_order_2_a_local_hf_tokenizer_named_by_the_served_model": "model",
        "test_chat_model_spec_takes_a_validated_tokenizer": "model",
        "test_memagent_keeps_a_memory_within_budget_and_cuts_one_beyond_it": "model",
        "test_one_choice_labels_the_answer_and_the_manifest": "model",
        "test_a_1000_character_chinese_memory_within_1024_model_tokens_is_not_cut": "model",
        "test_order_3_the_servers_tokenize_endpoint": "integration",
        "test_order_4_tiktoken_for_openai_model_names_5_labelled_cl100k_last": "integration",
        "test_a_hanging_server_fails_the_probe_within_longctx_timeout_and_its_retries": (
            "integration"
        ),
        "test_explicit_choices_override_the_order": "integration",
    },
    "test_tracing.py": {"*": "subprocess"},
    "test_transport_parity.py": {
        "test_retried_failures_are_retried_as_the_sdk_does": "integration",
        "test_failures_raise_what_the_sdk_raises": "integration",
        "test_a_server_requested_wait_is_honoured": "integration",
        "test_a_hung_server_times_out_as_with_the_sdk": "integration",
        "test_a_refused_connection_is_a_connection_error_as_with_the_sdk": "integration",
        "test_clients_it_cannot_reproduce_keep_the_sdk_path": "integration",
        "test_the_same_bytes_and_headers_go_out": "integration",
    },
    "test_trust.py": {
        "test_answer_many_memagent_runs_at_the_given_concurrency": "concurrency",
        "test_runner_option_memagent_concurrency_is_honoured": "concurrency",
        "test_planted_keys_appear_in_no_output": "integration",
        "test_failed_batch_fails_every_row_and_the_rerun_resumes": "integration",
        "test_steps_are_named_after_graph_nodes": "integration",
    },
    "test_twins.py": {
        "test_document_lock_twins_agree": "subprocess",
        "test_openai_model_generate_twins_agree": "integration",
    },
    "test_workspace.py": {
        "test_the_index_is_built_once_for_several_questions_and_strategies": "integration",
        "test_compare_gives_one_row_per_strategy_with_its_cost": "integration",
        "test_compare_without_a_price_has_no_cost_column_and_shows_a_refused_plan": "integration",
        "test_compare_shows_a_replayed_answer_at_what_it_cost_when_paid": "integration",
        "test_the_workspace_price_prices_its_budgets": "integration",
        "test_add_makes_a_new_document_answerable": "integration",
        "test_add_takes_documents_and_rereads_a_changed_file": "integration",
        "test_an_edited_file_whose_id_was_its_path_is_replaced_not_refused": "integration",
        "test_bad_input_fails_in_one_line_before_any_call": "integration",
        "test_budget_and_callbacks_pass_through": "integration",
        "test_estimate_is_agents_estimate_on_the_workspace": "integration",
        "test_aanswer_builds_the_index_in_a_thread_and_holds_it": "concurrency",
        "test_streams_use_the_workspace_model_cache_and_index": "integration",
        "test_no_questions_make_no_index_and_no_call": "integration",
    },
}


def tier_of(path: str, function: str) -> str | None:
    """The marker the table gives test ``function`` of ``path`` (relative to tests/), or None."""
    listed = TIERS.get(path, {})
    return listed.get("*") or listed.get(function)


def stale_entries(path: str, functions: set[str]) -> list[str]:
    """Entries for ``path`` that name none of its test ``functions`` (a test renamed or removed)."""
    return [
        f"{path}::{name}" for name in TIERS.get(path, {}) if name != "*" and name not in functions
    ]


def file_order(paths: list[str]) -> list[str]:
    """The order the workers get test files in (each path once, relative to tests/): the
    :data:`LONGEST_FILES` first, longest first, then the others by their number of tests, most first
    (pytest-xdist's own order), ties in collection order."""
    counts = Counter(paths)
    rank = {p: i for i, p in enumerate(LONGEST_FILES)}
    return sorted(counts, key=lambda p: (rank.get(p, len(rank)), -counts[p]))
