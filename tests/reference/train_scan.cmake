# Scanned training against PyTorch (docs/TRAINING.md, "The reverse scan"):
# compare_grads.py with train_dump_scan.sh as its driver trains the decoder
# and repeated-linear reference models with "loop": "scan" under each
# residual policy and compares first-step gradients, per-step losses and
# final parameters with torch (float64), as reference.grads.* do unrolled.
if(HS_TRAIN_REF_TORCH_RC EQUAL 0)
  foreach(policy save remat offload)
    add_test(NAME reference.grads.scan.${policy}
             COMMAND /usr/bin/python3 ${HS_TRAIN_REF_DIR}/compare_grads.py
                     ${HS_TRAIN_REF_DIR}/models/decoder.json
                     ${HS_TRAIN_REF_DIR}/models/repeat_linear.json
                     --driver ${HS_TRAIN_REF_DIR}/train_dump_scan.sh
                     --loss mse --optimizer adam --lr 0.001 --steps 3)
    set_tests_properties(reference.grads.scan.${policy} PROPERTIES
                         ENVIRONMENT "HS_TRAIN_DUMP=$<TARGET_FILE:train_dump>;HS_RESIDUALS=${policy}"
                         TIMEOUT 600 LABELS "reference;torch;train")
  endforeach()
endif()
