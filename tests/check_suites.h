/* One Check suite per module; tests/check_main.c runs them all. */
#ifndef TESTS_CHECK_SUITES_H
#define TESTS_CHECK_SUITES_H
#include <check.h>

Suite *conf_suite(void);
Suite *crc32c_suite(void);
Suite *chap_suite(void);
Suite *params_suite(void);
Suite *pdu_suite(void);
Suite *scsi_suite(void);
Suite *vaai_suite(void);
Suite *pr_suite(void);
Suite *backstore_suite(void);
Suite *stats_suite(void);
Suite *iscsi_name_suite(void);
Suite *login_suite(void);
Suite *pr_file_suite(void);
Suite *taskset_suite(void);
Suite *iscsi_cmdsn_suite(void);
Suite *iscsi_reader_suite(void);
Suite *iscsi_dataout_suite(void);
Suite *iscsi_tmf_suite(void);
Suite *limits_suite(void);
Suite *atomic_suite(void);
Suite *histo_suite(void);
Suite *space_suite(void);
Suite *log_suite(void);
Suite *fault_suite(void);
Suite *caw_native_suite(void);

#endif
