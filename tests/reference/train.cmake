# Training against PyTorch (docs/TRAINING.md), included from
# tests/reference/CMakeLists.txt:
#
#     include(${CMAKE_CURRENT_SOURCE_DIR}/train.cmake)
#
# train_dump (C): trains a model description and dumps input, params,
#   target, loss, grads and updated (the `hloscope run --dump` layout).
# reference.grads.<loss>.<optimizer>: compare_grads.py on the linear, mlp,
#   attention and decoder models (unrolled): first-step gradients vs torch
#   autograd, the loss of each of 10 steps and the final parameters vs
#   torch.optim, relative error <= 1e-4.
# reference.grads.all_models: the same on every models/*.json (every block
#   type), 3 Adam steps with mse.
# Registered only when /usr/bin/python3 can import torch at configure time.

add_executable(train_dump ${CMAKE_CURRENT_LIST_DIR}/train_dump.c)
target_link_libraries(train_dump PRIVATE hloscope)

set(HS_TRAIN_REF_DIR ${CMAKE_CURRENT_LIST_DIR})
set(HS_TRAIN_REF_MODELS linear mlp attention decoder)
set(HS_TRAIN_REF_PATHS "")
foreach(name ${HS_TRAIN_REF_MODELS})
  list(APPEND HS_TRAIN_REF_PATHS ${HS_TRAIN_REF_DIR}/models/${name}.json)
endforeach()

execute_process(COMMAND /usr/bin/python3 -c "import torch"
                RESULT_VARIABLE HS_TRAIN_REF_TORCH_RC OUTPUT_QUIET ERROR_QUIET)
if(HS_TRAIN_REF_TORCH_RC EQUAL 0)
  # name | loss | optimizer | lr
  set(HS_TRAIN_REF_RUNS
      "mse|mse|sgd|0.1"
      "mse|mse|adam|0.001"
      "ce|cross_entropy|sgd|0.1"
      "ce|cross_entropy|adam|0.001")
  foreach(run ${HS_TRAIN_REF_RUNS})
    string(REPLACE "|" ";" f "${run}")
    list(GET f 0 tag)
    list(GET f 1 loss)
    list(GET f 2 opt)
    list(GET f 3 lr)
    add_test(NAME reference.grads.${tag}.${opt}
             COMMAND /usr/bin/python3 ${HS_TRAIN_REF_DIR}/compare_grads.py
                     ${HS_TRAIN_REF_PATHS} --driver $<TARGET_FILE:train_dump>
                     --loss ${loss} --optimizer ${opt} --lr ${lr} --steps 10)
    set_tests_properties(reference.grads.${tag}.${opt} PROPERTIES
                         TIMEOUT 600 LABELS "reference;torch;train")
  endforeach()
  file(GLOB HS_TRAIN_REF_ALL CONFIGURE_DEPENDS ${HS_TRAIN_REF_DIR}/models/*.json)
  add_test(NAME reference.grads.all_models
           COMMAND /usr/bin/python3 ${HS_TRAIN_REF_DIR}/compare_grads.py
                   ${HS_TRAIN_REF_ALL} --driver $<TARGET_FILE:train_dump>
                   --loss mse --optimizer adam --lr 0.001 --steps 3)
  set_tests_properties(reference.grads.all_models PROPERTIES
                       TIMEOUT 600 LABELS "reference;torch;train")
else()
  message(STATUS "reference: /usr/bin/python3 cannot import torch, reference.grads.* skipped")
endif()
