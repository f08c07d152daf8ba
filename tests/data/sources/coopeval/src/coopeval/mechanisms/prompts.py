"""Stand-in templates of the mechanisms (our words, short)."""

MEDIATOR_DESIGN_PROMPT = "TWIST: design a mediator; map 1..{num_players} delegators to an action.\n"
MEDIATOR_APPROVAL_VOTE_PROMPT = "TWIST: approve mediators.\n{all_mediators_description}ANSWER: M-keys, true/false.\n"
MEDIATION_MECHANISM_PROMPT = ("TWIST: mediator of Player {designer_player_id}:\n{mediator_description}\n"
                              "A{additional_action_id} hands your move to it.\n")
CONTRACT_DESIGN_PROMPT = "TWIST: design a contract; one payment per action.\n"
CONTRACT_APPROVAL_VOTE_PROMPT = "TWIST: approve contracts.\n{all_contracts_description}ANSWER: C-keys, true/false.\n"
CONTRACT_CONFIRMATION_PROMPT = ("TWIST: sign the contract of Player {designer_player_id}?\n"
                                "{contract_description}\nANSWER: sign true/false.\n")
CONTRACT_MECHANISM_PROMPT = "TWIST: signed contract of Player {designer_player_id}:\n{contract_description}\n"
CONTRACT_REJECTION_PROMPT = ("TWIST: unsigned contract of Player {designer_player_id}:\n{contract_description}\n"
                             "refused by {rejector_ids}\n")
REPETITION_MECHANISM_PROMPT = "TWIST: again with {discount}% odds; {round_idx} played.\n{history_context}\n"
REPUTATION_MECHANISM_PROMPT = "TWIST: strangers, {discount}% odds; {round_idx} played.\n{history_context}\n"
